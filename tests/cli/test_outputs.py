"""The CLI's output policy (capeval.outputs): never over an input, never over an existing file
without --overwrite (a row file's <name>.signatures.json included), every write atomic."""
import errno
import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from capeval.cli.main import app
from capeval.errors import CapevalError, OutputError
from capeval.outputs import atomic_open, atomic_write, check_outputs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


def _jsonl(tmp_path, name="in.jsonl"):
    p = tmp_path / name
    shutil.copy(EXAMPLES / "captions.jsonl", p)
    return p


def _csv(tmp_path, name="in.csv"):
    p = tmp_path / name
    p.write_text("id,candidate,ref1,ref2\na,a dog runs,a dog is running,the dog runs\n"
                 "b,a cat sits,a cat is sitting,cat on a mat\n", encoding="utf-8")
    return p


class _Run:
    """A CLI result whose ``output`` has rich's line wrapping undone."""

    def __init__(self, res):
        self.exit_code, self.output = res.exit_code, " ".join(res.output.split())


def _invoke(args):
    return _Run(runner.invoke(app, args))


def _score(*args):
    return _invoke(["score", "-m", "bleu1,rouge_l", "--tokenizer", "none", "-q", *args])


def _snapshot(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize("make, name", [(_csv, "in.csv"), (_jsonl, "in.jsonl")])
def test_output_that_is_the_input_is_refused_even_with_overwrite(tmp_path, make, name):
    src = make(tmp_path, name)
    before = _snapshot(tmp_path)
    for extra in ([], ["--overwrite"]):
        res = _score("-i", str(src), "-o", str(src), *extra)
        assert res.exit_code == 2, res.output
        assert "is the input" in res.output and name in res.output
        assert _snapshot(tmp_path) == before  # nothing written, not even a sidecar or run folder
        assert not any(p.is_dir() for p in tmp_path.iterdir())


def test_output_reaching_the_input_by_a_link_is_refused(tmp_path):
    src = _csv(tmp_path)
    os.symlink(src, tmp_path / "sym.csv")
    os.link(src, tmp_path / "hard.csv")
    (tmp_path / "dir").mkdir()
    before = src.read_bytes()
    for out in (tmp_path / "sym.csv", tmp_path / "hard.csv", tmp_path / "dir" / ".." / "in.csv"):
        res = _score("-i", str(src), "-o", str(out), "--overwrite")
        assert res.exit_code == 2 and "is the input" in res.output, (out, res.output)
    assert src.read_bytes() == before


def test_sidecar_over_the_annotations_file_is_refused(tmp_path):
    # COCO input: -o x.csv writes x.signatures.json, which here is the annotations file.
    ann = tmp_path / "x.signatures.json"
    shutil.copy(EXAMPLES / "coco_annotations.json", ann)
    before = ann.read_bytes()
    res = _score("-i", str(EXAMPLES / "coco_results.json"), "-a", str(ann), "-o", str(tmp_path / "x.csv"),
                 "--overwrite")
    assert res.exit_code == 2 and "is the input" in res.output and "x.signatures.json" in res.output
    assert ann.read_bytes() == before and not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("out_name", ["o.json", "o.csv", "o.jsonl"])
def test_existing_output_refused_unless_overwrite(tmp_path, out_name):
    src = _jsonl(tmp_path)
    out = tmp_path / out_name
    out.write_text("precious\n")
    res = _score("-i", str(src), "-o", str(out))
    assert res.exit_code == 2, res.output
    assert "already exist" in res.output and "--overwrite" in res.output and out_name in res.output
    assert out.read_text() == "precious\n"
    assert not (tmp_path / "o.signatures.json").exists()
    res = _score("-i", str(src), "-o", str(out), "--overwrite")
    assert res.exit_code == 0, res.output
    assert out.read_text() != "precious\n"


@pytest.mark.parametrize("coco", [False, True], ids=["streamed-jsonl", "in-memory-csv"])
def test_foreign_sidecar_is_never_silently_overwritten(tmp_path, coco):
    # x.signatures.json of another run (e.g. -o x.jsonl earlier), while x.csv does not exist.
    side = tmp_path / "x.signatures.json"
    side.write_text('{"corpus": {"other": 1.0}}')
    out = tmp_path / ("x.csv" if coco else "x.jsonl")
    args = (["-i", str(EXAMPLES / "coco_results.json"), "-a", str(EXAMPLES / "coco_annotations.json")]
            if coco else ["-i", str(_jsonl(tmp_path))])
    res = _score(*args, "-o", str(out))
    assert res.exit_code == 2, res.output
    assert "x.signatures.json (written beside" in res.output and out.name in res.output  # names both files
    assert side.read_text() == '{"corpus": {"other": 1.0}}' and not out.exists()
    res = _score(*args, "-o", str(out), "--overwrite")
    assert res.exit_code == 0, res.output
    assert set(json.loads(side.read_text())["corpus"]) == {"bleu1", "rouge_l"}


def test_save_cider_df_is_an_output_too(tmp_path):
    src = _jsonl(tmp_path)
    df = tmp_path / "df.json"
    df.write_text("{}")
    res = _invoke(["score", "-i", str(src), "-m", "cider_d", "-q", "--save-cider-df", str(df)])
    assert res.exit_code == 2 and "already exist" in res.output and df.read_text() == "{}"
    res = _invoke(["score", "-i", str(src), "-m", "cider_d", "-q", "--cider-df", str(df),
                              "--save-cider-df", str(df), "--overwrite"])
    assert res.exit_code == 2 and "is the input" in res.output


def test_killed_streamed_run_resumes_without_overwrite(tmp_path):
    # A killed streamed run leaves its run folder and no output: re-running is not an overwrite.
    src = _jsonl(tmp_path)
    out = tmp_path / "o.jsonl"
    (tmp_path / "o.jsonl.capeval-run").mkdir()
    res = _score("-i", str(src), "-o", str(out), "--chunk-size", "2")
    assert res.exit_code == 0, res.output
    assert out.exists() and not (tmp_path / "o.jsonl.capeval-run").exists()


def _enospc_for(monkeypatch, marker: str):
    """os.fsync fails with ENOSPC ("disk full") on files whose name contains ``marker``."""
    real = os.fsync

    def fsync(fd):
        if marker in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to name a file descriptor")
@pytest.mark.parametrize("out_name, coco", [("o.json", False), ("o.csv", True), ("o.jsonl", False),
                                            ("o.parquet", False), ("o.csv", False)])
def test_full_disk_leaves_previous_files_whole_and_no_temporaries(tmp_path, monkeypatch, out_name, coco):
    if out_name.endswith(".parquet"):
        pytest.importorskip("pyarrow")
    src = _jsonl(tmp_path)
    out = tmp_path / out_name
    out.write_text("previous\n")
    side = tmp_path / "o.signatures.json"
    if out.suffix != ".json":
        side.write_text("previous sidecar\n")
    args = (["-i", str(EXAMPLES / "coco_results.json"), "-a", str(EXAMPLES / "coco_annotations.json")]
            if coco else ["-i", str(src)])
    before = _snapshot(tmp_path)
    _enospc_for(monkeypatch, ".o.")  # the temporaries are hidden names beside the output
    res = _score(*args, "-o", str(out), "--overwrite")
    assert res.exit_code == 2, res.output
    assert "No space left on device" in res.output
    assert _snapshot(tmp_path) == before  # old output and sidecar byte for byte, no temporary left
    monkeypatch.undo()
    res = _score(*args, "-o", str(out), "--overwrite")  # the same command works once there is room
    assert res.exit_code == 0, res.output
    assert out.read_bytes() != b"previous\n"


def test_write_failing_midway_keeps_the_old_file(tmp_path, monkeypatch):
    # The CSV writer dies after its header (a crash mid-file): old rows and sidecar stay.
    import capeval.inputs as cio

    out = tmp_path / "o.csv"
    out.write_text("old rows\n")
    (tmp_path / "o.signatures.json").write_text("old sidecar\n")
    before = _snapshot(tmp_path)

    class Dying:
        def __init__(self, f):
            self.f, self.n = f, 0

        def writerow(self, row):
            self.n += 1
            if self.n > 1:
                raise OSError(errno.EIO, "simulated I/O error")
            self.f.write(",".join(map(str, row)) + "\n")

    monkeypatch.setattr(cio.csv, "writer", lambda f, **kw: Dying(f))
    res = _score("-i", str(EXAMPLES / "coco_results.json"), "-a", str(EXAMPLES / "coco_annotations.json"),
                 "-o", str(out), "--overwrite")
    assert res.exit_code == 2 and "simulated I/O error" in res.output, res.output
    assert _snapshot(tmp_path) == before


def test_atomic_helpers(tmp_path):
    p = tmp_path / "sub" / "f.txt"
    atomic_write(p, "one")  # creates the folder
    assert p.read_text() == "one"
    with pytest.raises(RuntimeError):
        with atomic_open(p) as f:
            f.write("half")
            raise RuntimeError("crash")
    assert p.read_text() == "one" and os.listdir(p.parent) == ["f.txt"]
    assert oct(p.stat().st_mode & 0o777) == oct(0o666 & ~_umask())  # not mkstemp's 0600
    with pytest.raises(OutputError, match="same file"):
        check_outputs([p, tmp_path / "sub" / "." / "f.txt"], overwrite=True)
    with pytest.raises(OutputError, match="directory"):
        check_outputs([tmp_path], overwrite=True)
    assert issubclass(OutputError, CapevalError)


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_pregen_bench_train_refuse_existing_outputs(tmp_path):
    from capeval.pregen.tokens import TokenScores

    probs = tmp_path / "p.npz"
    TokenScores.from_nested([[[(0.5, 0)]]]).save_npz(probs)
    before = probs.read_bytes()
    res = _invoke(["pregen", "score", "-p", str(probs), "-o", str(probs), "--overwrite"])
    assert res.exit_code == 2 and "is the input" in res.output and probs.read_bytes() == before
    o = tmp_path / "o.json"
    o.write_text("keep")
    res = _invoke(["pregen", "score", "-p", str(probs), "-o", str(o)])
    assert res.exit_code == 2 and "already exist" in res.output and o.read_text() == "keep"
    res = _invoke(["pregen", "score", "-p", str(probs), "-o", str(o), "--overwrite"])
    assert res.exit_code == 0 and "signature" in json.loads(o.read_text())
    # Checked before any work: the benchmark name is not even looked at.
    res = _invoke(["bench", "no-such-benchmark", "--json", str(o), "--markdown", str(tmp_path / "m.md")])
    assert res.exit_code == 2 and "already exist" in res.output and not (tmp_path / "m.md").exists()
    res = _invoke(["bench", "x", "--json", str(tmp_path / "a.json"), "--latex", str(tmp_path / "a.json")])
    assert res.exit_code == 2 and "same file" in res.output
    res = _invoke(["train", "linear", "--out", str(o), "--root", str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and "already exist" in res.output and o.read_text().startswith("{")
