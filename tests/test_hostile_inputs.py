"""Every surface that reads outside input, against every hostile input (issue 33; the doors are
:mod:`capeval.guards`, docs/RELIABILITY.md lists them).

:data:`SURFACES` lists the ways in (command-line options and Python entry points), each with the
kind of file it reads; :data:`HOSTILE` lists the inputs, each able to take the shape of some
kinds (a 100,000-deep JSON value, a 400-digit number, a character device, a FIFO, a symbolic-link
loop, a sparse 1.5 GiB file, image and pickle bombs). The test is their product, so a surface
added to the list meets the whole corpus. A command must end with status 2 and a one-line named
error (no traceback); a Python entry point must raise :class:`capeval.errors.InputError`.

Cases that could hang or exhaust memory if a guard failed (devices, FIFOs, bombs, huge files,
deep pickles, which crash the interpreter rather than raise) run in a subprocess whose address
space is capped at 4 GiB (``RLIMIT_AS``, as ``ulimit -v 4194304``) under a time limit; the others
run in this process.
"""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from capeval.dffile import FORMAT as DF_FORMAT

# ------------------------------------------------------------------------------ the corpus

NESTED = "[" * 100_000 + "]" * 100_000
HUGE = "1" * 400

#: Kind -> file text around one JSON value ``{v}`` (the hostile value goes there).
JSON_TEMPLATES = {
    "jsonl": '{{"id": {v}, "candidate": "a dog", "references": ["a dog runs"]}}\n',
    "image_field": '{{"id": "a", "candidate": "a dog", "references": ["a dog runs"], "image": {v}}}\n',
    "coco_results": '[{{"image_id": {v}, "caption": "a dog"}}]',
    "coco_annotations": '{{"annotations": [{{"image_id": {v}, "caption": "a dog runs"}}]}}',
    "df": '{{"format": "' + DF_FORMAT + '", "n_units": {v}, "df": {{"a": 1}}}}',
    "scores_jsonl": '{{"id": "u1", "score": {v}}}\n',
    "data_json": '{{"items": {v}}}',
    "judgments_jsonl": '{{"candidate": "a dog", "references": ["a dog runs"], "human": {v}}}\n',
}

#: Kinds read from a file (the others are directories).
FILE_KINDS = {*JSON_TEMPLATES, "csv", "scores_csv", "pickle", "image", "parquet", "npz", "model_npz", "results_tsv",
              "torch_ckpt", "hparams_yaml"}


def _model_npz(meta_json: str) -> bytes:
    """A model file (capeval.learn.model_files) whose metadata is ``meta_json``."""
    import io

    import numpy as np

    buf = io.BytesIO()
    np.savez(buf, meta_json=np.array(meta_json), w=np.zeros(2))
    return buf.getvalue()


def _u(text: str) -> bytes:  # pickle BINUNICODE
    b = text.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def _df_pickle(key_ops: bytes, ref_len: bytes = b"K\x0a") -> bytes:
    """``{"document_frequency": {<key>: 1.0}, "ref_len": <ref_len>}`` in protocol 2, built op by
    op: pickling a 200,000-deep key would itself overflow the stack."""
    return (b"\x80\x02}" + _u("document_frequency") + b"}" + key_ops + b"G" + struct.pack(">d", 1.0) + b"ss"
            + _u("ref_len") + ref_len + b"s.")


def _memo_bomb() -> bytes:
    """One 1 MiB word in the memo, then 2,000 two-word n-grams reusing it (a 1 MB file)."""
    word = _u("w" * (1 << 20)) + b"q\x00"  # BINPUT 0
    out = b"\x80\x02}" + _u("document_frequency") + b"}" + word + b"\x85G" + struct.pack(">d", 1.0) + b"s"
    for i in range(2000):
        out += b"h\x00" + _u(str(i)) + b"\x86G" + struct.pack(">d", 1.0) + b"s"
    return out + b"s" + _u("ref_len") + b"K\x0as."


def _png(width: int, height: int) -> bytes:
    """A 1-bit greyscale PNG of ``width`` x ``height`` zero pixels, compressed as it is written
    (a 50000x50000 one is about 2.4 MB; nothing that size is held in memory)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" * (1 + (width + 7) // 8)
    z = zlib.compressobj(9)
    parts = []
    rows_per = max(1, (1 << 20) // len(row))
    for start in range(0, height, rows_per):
        parts.append(z.compress(row * min(rows_per, height - start)))
    parts.append(z.flush())
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", b"".join(parts)) + chunk(b"IEND", b"")


def _content(kind: str, value: str) -> bytes | None:
    if kind in JSON_TEMPLATES:
        return JSON_TEMPLATES[kind].format(v=value).encode()
    if kind == "model_npz":
        return _model_npz('{"kind": ' + value + "}")
    return None


@dataclass(frozen=True)
class Hostile:
    name: str
    risky: bool  # run in a capped subprocess
    expect: str  # a phrase of the named error

    def has_form(self, kind: str) -> bool:
        """Whether :meth:`make` gives this input as a ``kind`` (decided without writing it, so
        that only the pairs that exist are collected)."""
        return {
            "nested_json": kind in JSON_TEMPLATES or kind in ("pickle", "model_npz"),
            "huge_number": kind in JSON_TEMPLATES or kind in ("scores_csv", "pickle", "model_npz"),
            "device": kind in FILE_KINDS or kind == "images_dir",
            "fifo": kind in FILE_KINDS,
            "symlink_loop": True,
            "huge_file": kind in FILE_KINDS,
            "pixel_bomb": kind == "image",
            "aspect_bomb": kind == "image",
            "memo_bomb": kind == "pickle",
        }[self.name]

    def make(self, kind: str, dest: Path) -> Path | None:
        """Write this input as a ``kind`` at ``dest`` (a file path with the kind's suffix, or a
        directory path); None when it has no such shape."""
        if self.name == "nested_json":
            data = _content(kind, NESTED) or (_df_pickle(_u("a") + b"\x85" * 200_000) if kind == "pickle" else None)
        elif self.name == "huge_number":
            data = _content(kind, HUGE)
            if kind == "scores_csv":
                data = f"id,score\nu1,{HUGE}\n".encode()
            elif kind == "pickle":
                digits = (10 ** 400).to_bytes(167, "little")
                data = _df_pickle(_u("a") + b"\x85", b"\x8b" + struct.pack("<i", len(digits)) + digits)  # LONG4
        elif self.name == "device":
            if kind == "images_dir":
                dest.symlink_to("/dev/zero")
                return dest
            if kind not in FILE_KINDS:
                return None
            dest.symlink_to("/dev/zero")
            return dest
        elif self.name == "fifo":
            if kind not in FILE_KINDS:
                return None
            os.mkfifo(dest)
            return dest
        elif self.name == "symlink_loop":
            if kind == "images_dir":
                dest.mkdir()
                (dest / "here").symlink_to(".")
                (dest / "again").symlink_to(".")
                (dest / "sub").mkdir()
                (dest / "sub" / "up").symlink_to("..")
                return dest
            dest.symlink_to(dest.name)  # a link to itself
            return dest
        elif self.name == "huge_file":
            if kind not in FILE_KINDS:
                return None
            with open(dest, "wb") as f:  # sparse: 1.5 GiB of NUL bytes after a valid start
                f.write(b"id,score\n" if kind == "scores_csv" else b"")
                f.truncate(3 << 29)
            return dest
        elif self.name == "pixel_bomb":
            data = _png(50_000, 50_000) if kind == "image" else None
        elif self.name == "aspect_bomb":
            data = _png(1, 40_000) if kind == "image" else None
        elif self.name == "memo_bomb":
            data = _memo_bomb() if kind == "pickle" else None
        else:
            raise AssertionError(self.name)
        if data is None:
            return None
        dest.write_bytes(data)
        return dest


HOSTILE = [
    Hostile("nested_json", False, "deeper than"),
    Hostile("huge_number", False, "digits"),
    Hostile("device", True, "character device"),
    Hostile("fifo", True, "FIFO"),
    Hostile("symlink_loop", False, ""),
    Hostile("huge_file", True, ""),
    Hostile("pixel_bomb", True, "pixels"),
    Hostile("aspect_bomb", True, "longer than it is wide"),
    Hostile("memo_bomb", True, "every reference"),
]

# ----------------------------------------------------------------------------- the surfaces

GOOD_ROWS = [{"id": "a", "candidate": "a dog runs", "references": ["a dog runs fast"], "image": "a.png"},
             {"id": "b", "candidate": "two cats", "references": ["two cats sleep"], "image": "missing.png"}]


def _good_files(d: Path) -> dict[str, str]:
    rows = d / "good.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in GOOD_ROWS), encoding="utf-8")
    ann = d / "good_ann.json"
    ann.write_text(json.dumps({"annotations": [{"image_id": 1, "caption": "a dog runs"}]}), encoding="utf-8")
    res = d / "good_res.json"
    res.write_text(json.dumps([{"image_id": 1, "caption": "a dog"}]), encoding="utf-8")
    return {"rows": str(rows), "ann": str(ann), "res": str(res), "out": str(d / "out.json"),
            "outp": str(d / "out_df.json")}


def install_toy_benchmarks(set_attr=setattr) -> None:
    """The synthetic benchmarks of ``tests/metaeval/conftest.py`` behind ``capeval.data.load``
    (``set_attr``: ``monkeypatch.setattr`` in this process, plain ``setattr`` in a subprocess)."""
    import capeval.data
    from tests.metaeval.conftest import make_tables

    tables = make_tables()
    real, real_spec = capeval.data.load, capeval.data.registry.get_spec
    set_attr(capeval.data, "load", lambda name, root=None, **kw: tables[name] if name in tables else real(name, root, **kw))
    set_attr(capeval.data.registry, "get_spec", lambda name: None if name in tables else real_spec(name))


@dataclass(frozen=True)
class Surface:
    name: str
    kind: str
    suffix: str
    cli: tuple[str, ...] = ()  # argv, "{path}" and the _good_files keys in braces
    api: str = ""  # Python statements using {path!r}
    toy_benchmarks: bool = False  # needs install_toy_benchmarks()

    def argv(self, path: Path, good: dict[str, str]) -> list[str]:
        return [a.format(path=str(path), **good) for a in self.cli]


SURFACES = [
    Surface("score -i jsonl (streamed)", "jsonl", ".jsonl", ("score", "-i", "{path}", "-m", "bleu4", "-q")),
    Surface("score -i jsonl (in memory)", "jsonl", ".jsonl",
            ("score", "-i", "{path}", "-m", "bleu4", "-o", "{out}", "-q")),
    Surface("score -i csv (streamed)", "csv", ".csv", ("score", "-i", "{path}", "-m", "bleu4", "-q")),
    Surface("score -i csv (in memory)", "csv", ".csv", ("score", "-i", "{path}", "-m", "bleu4", "-o", "{out}", "-q")),
    Surface("score -i parquet (streamed)", "parquet", ".parquet", ("score", "-i", "{path}", "-m", "bleu4", "-q")),
    Surface("score -i jsonl image field", "image_field", ".jsonl",
            ("score", "-i", "{path}", "-m", "bleu4", "-o", "{out}", "-q")),
    Surface("score -i COCO results", "coco_results", ".json",
            ("score", "-i", "{path}", "--annotations", "{ann}", "-m", "bleu4", "-q")),
    Surface("score --annotations", "coco_annotations", ".json",
            ("score", "-i", "{res}", "--annotations", "{path}", "-m", "bleu4", "-q")),
    Surface("score --cider-df", "df", ".json", ("score", "-i", "{rows}", "-m", "cider_d", "--cider-df", "{path}", "-q")),
    Surface("score --images (streamed)", "images_dir", "",
            ("score", "-i", "{rows}", "-m", "bleu4", "--images", "{path}", "-q")),
    Surface("score --images (in memory)", "images_dir", "",
            ("score", "-i", "{rows}", "-m", "bleu4", "--images", "{path}", "-o", "{out}", "-q")),
    Surface("bench --scores jsonl", "scores_jsonl", ".jsonl",
            ("bench", "toy-corr", "--scores", "mine={path}", "--no-cache", "-q"), toy_benchmarks=True),
    Surface("bench --scores csv", "scores_csv", ".csv",
            ("bench", "toy-corr", "--scores", "mine={path}", "--no-cache", "-q"), toy_benchmarks=True),
    Surface("bench --file jsonl", "judgments_jsonl", ".jsonl", ("bench", "--file", "{path}", "-m", "bleu4", "-q")),
    Surface("bench --file csv", "csv", ".csv", ("bench", "--file", "{path}", "-m", "bleu4", "-q")),
    Surface("compat convert-cider-df", "pickle", ".p", ("compat", "convert-cider-df", "{path}", "{outp}")),
    Surface("CiderD(df=...)", "df", ".json", api="from capeval.compat.ciderD import CiderD\nCiderD(df={path!r})"),
    Surface("scores_metric()", "scores_jsonl", ".jsonl",
            api="from capeval.metrics.user import scores_metric\nscores_metric('mine', {path!r})"),
    Surface("read_fork_df(allow_pickle=True)", "pickle", ".p",
            api="import warnings\nwarnings.simplefilter('ignore')\n"
                "from capeval.compat.fork_df import read_fork_df\nread_fork_df({path!r}, allow_pickle=True)"),
    Surface("benchmark data file", "data_json", ".json",
            api="from pathlib import Path\nfrom capeval.data._common import read_json\nread_json(Path({path!r}), 'bench')"),
    Surface("pregen analyse results", "results_tsv", ".txt", ("pregen", "analyse", "{path}")),
    Surface("pregen --probs file", "npz", ".npz",
            api="from capeval.pregen.tokens import TokenScores\nTokenScores.load_npz({path!r})"),
    Surface("learned-metric model file", "model_npz", ".npz",
            api="from capeval.learn.model_files import load_npz\nload_npz({path!r})"),
    Surface("CLIP image", "image", ".png",
            api="from capeval.guards import read_image_bytes\nfrom capeval.metrics._clip_image import decode, "
                "preprocess_image\npreprocess_image(decode(read_image_bytes({path!r}), {path!r}), 224)"),
    Surface("fleur/reffleur image (judge request)", "image", ".png",
            api="from capeval.judges.metric import judge_image\njudge_image({path!r})"),
    Surface("pairjudge image (judge request)", "image", ".png",
            api="from capeval.judges.pairwise import PairJudge\nPairJudge(model='m', url='http://127.0.0.1:9/v1')"
                ".requests(['a', 'b'], [['r'], ['r']], [{path!r}, {path!r}])"),
    Surface("polos checkpoint", "torch_ckpt", ".ckpt",
            api="from pathlib import Path\nfrom capeval.metrics._polos_model import read_state_dict\n"
                "read_state_dict(Path({path!r}))"),
    Surface("polos hparams.yaml", "hparams_yaml", ".yaml",
            api="from pathlib import Path\nfrom capeval.metrics._polos_model import read_hparams\n"
                "read_hparams(Path({path!r}).parent / 'm.ckpt', Path({path!r}))"),
]

RUNNER = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    mode, toy, payload = sys.argv[1], sys.argv[2] == "toy", sys.argv[3:]
    if toy:
        from tests.test_hostile_inputs import install_toy_benchmarks
        install_toy_benchmarks()
    if mode == "cli":
        from capeval.cli.main import app
        sys.argv = ["capeval", *payload]
        app()
    else:
        from capeval.errors import InputError
        try:
            exec(payload[0])
        except InputError as e:
            print("NAMED:", e)
            sys.exit(2)
        print("ACCEPTED")
""")


def _run_cli_inprocess(argv):
    from typer.testing import CliRunner

    from capeval.cli.main import app

    res = CliRunner().invoke(app, argv)
    return res.exit_code, res.output


def _run_api_inprocess(code):
    from capeval.errors import InputError

    try:
        exec(code, {})  # noqa: S102 - the surface's own statements, written above
    except InputError as e:
        return 2, f"NAMED: {e}"
    return 0, "ACCEPTED"


def _run_capped(mode, payload, toy: bool):
    proc = subprocess.run([sys.executable, "-c", RUNNER, mode, "toy" if toy else "-", *payload], capture_output=True,
                          text=True, timeout=120, check=False, cwd=Path(__file__).parent.parent)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize(("surface", "hostile"), [pytest.param(s, h, id=f"{s.name}-{h.name}")
                                                   for h in HOSTILE for s in SURFACES if h.has_form(s.kind)])
def test_hostile_input_gets_a_named_error(surface, hostile, tmp_path, monkeypatch):
    good = _good_files(tmp_path)
    path = hostile.make(surface.kind, tmp_path / f"hostile{surface.suffix}")
    assert path is not None, "has_form said it has this form"
    if surface.toy_benchmarks and not hostile.risky:
        install_toy_benchmarks(monkeypatch.setattr)
    if surface.cli:
        argv = surface.argv(path, good)
        code, out = _run_capped("cli", argv, surface.toy_benchmarks) if hostile.risky else _run_cli_inprocess(argv)
    else:
        api = surface.api.format(path=str(path))
        code, out = _run_capped("api", [api], False) if hostile.risky else _run_api_inprocess(api)
    flat = " ".join(out.split())
    assert code == 2, f"exit {code}: {out[-3000:]}"
    assert "Traceback" not in out, out[-3000:]
    if not surface.cli:
        assert flat.startswith("NAMED:") or "\nNAMED:" in out, out[-3000:]
    assert hostile.expect in flat, flat[-2000:]
    assert path.name in flat or str(path) in flat or "image(s) not found" in flat, flat[-2000:]


# ------------------------------------------------------------------------------ cache entries

def _shard_with(values: float) -> tuple[str, bytes]:
    import numpy as np

    from capeval.metrics._clip_cache import shard_bytes

    return shard_bytes({"ab" * 32: np.full(4, values, dtype=np.float32)})


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _rewrite_with_other_values(path: Path) -> None:
    path.write_bytes(_shard_with(2.0)[1])  # a valid shard, under the first one's name


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _device(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


#: Cache surfaces: (name, write one good entry into a folder and return its path, read the
#: folder back -> the entries found).
def _clip_write(folder: Path) -> Path:
    import numpy as np

    from capeval.metrics._clip_cache import write_shard

    path = write_shard(folder, {"ab" * 32: np.full(4, 1.0, dtype=np.float32)})
    assert path is not None
    return path


def _clip_read(folder: Path) -> dict:
    from capeval.metrics._clip_cache import load_shards

    return load_shards(folder)


PARSED = ["A man runs .", "Two dogs play ."]


def _parse_cache(folder: Path):
    import warnings

    from capeval.guards import CacheDamaged, CacheFolder
    from capeval.outputs import atomic_write

    return CacheFolder(folder, ".json", atomic_write, lambda m: warnings.warn(m, CacheDamaged, stacklevel=2))


def _parses_write(folder: Path) -> Path:
    rows = [[[w, t.index(w), "NN", "NOUN", "dep", 0, w.lower()] for w in t.split(" ")] for t in PARSED]
    path = _parse_cache(folder).add(json.dumps(rows).encode(), "k")
    assert path is not None
    return path


def _parses_read(folder: Path) -> dict:
    from capeval.data.distractors import _read_parses

    got = _read_parses(_parse_cache(folder), "k", PARSED)
    return {} if got is None else {"k": got}


def _judge_write(folder: Path) -> Path:
    from capeval.judges.backend import Reply
    from capeval.judges.cache import ResponseCache

    ResponseCache(folder).put("k" * 64, Reply(text='{"score": 70, "reason": "a dog"}', prompt_tokens=9))
    (path,) = folder.rglob("*.json")
    return path


def _judge_read(folder: Path) -> dict:
    from capeval.judges.cache import ResponseCache

    got = ResponseCache(folder).get("k" * 64)
    return {} if got is None else {"k": got}


CACHES = [("CLIP image embeddings", _clip_write, _clip_read), ("stress parses", _parses_write, _parses_read),
          ("judge responses", _judge_write, _judge_read)]
DAMAGE = [_flip_a_byte, _rewrite_with_other_values, _truncate, _fifo, _device]


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("cache", CACHES, ids=lambda c: c[0])
def test_a_damaged_cache_entry_is_dropped_with_a_note(cache, damage, tmp_path):
    """Not an error on every later run, and never other values read silently: the entry is
    deleted (so the next run writes a good one) and a warning names it."""
    from capeval.metrics._clip_cache import CacheDamaged

    _, write, read = cache
    entry = write(tmp_path / "cache")
    assert len(read(tmp_path / "cache")) == 1
    damage(entry)
    with pytest.warns(CacheDamaged, match=entry.name):
        assert read(tmp_path / "cache") == {}
    assert not os.path.lexists(entry)
    write(tmp_path / "cache")
    assert len(read(tmp_path / "cache")) == 1  # healed


def test_has_form_is_what_make_does(tmp_path):
    """Every (input, kind) pair left out of the collection is one ``make`` has no form for; the
    bombs are checked by their kinds only (writing them takes seconds)."""
    kinds = sorted({s.kind for s in SURFACES})
    for h in HOSTILE:
        for k in kinds:
            if h.name in ("pixel_bomb", "aspect_bomb", "huge_file") and h.has_form(k):
                continue
            made = h.make(k, tmp_path / f"{h.name}-{k}")
            assert (made is not None) == h.has_form(k), (h.name, k)


# ------------------------------------------------------------------------------ run folder

#: A streamed run's folder (docs/RELIABILITY.md, "Run folders"): each file a stopped run left, in
#: every hostile shape (as a JSON kind's text where it has one). The resumed run heals (the
#: in-memory bytes) or, for the fingerprint itself, is refused by name.
RUN_FILES = ["chunk-0000001.bin", "prep-0000002.bin", "df.json", "run.key", "run.json"]


@pytest.mark.parametrize("hostile", [h for h in HOSTILE if h.has_form("df")], ids=lambda h: h.name)
@pytest.mark.parametrize("name", RUN_FILES)
def test_a_hostile_run_folder_file_heals_or_is_named(name, hostile, tmp_path):
    from capeval import score, score_stream
    from capeval.errors import InputError
    from capeval.inputs import write_result

    rows = [{"id": f"r{i}", "candidate": f"a dog {i} runs", "references": [f"a dog runs {i % 7}", "a cat"]}
            for i in range(40)]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"

    class Stop(Exception):
        pass

    def stop(stage, n):
        if stage == "score" and n >= 20:
            raise Stop

    with pytest.raises(Stop):
        score_stream(src, ["bleu4", "cider_d"], output=out, chunk_size=10, progress=stop)
    target = tmp_path / "out.jsonl.capeval-run" / name
    assert target.exists()
    target.unlink()
    assert hostile.make("df", target) is not None
    try:
        score_stream(src, ["bleu4", "cider_d"], output=out, chunk_size=10)
    except InputError as e:
        assert name == "run.json" and "run.json" in str(e)
        return
    assert name != "run.json", "a hostile run.json was taken"
    mem = score([r["candidate"] for r in rows], [r["references"] for r in rows], ["bleu4", "cider_d"],
                ids=[r["id"] for r in rows])
    write_result(mem, tmp_path / "mem.jsonl", [r["id"] for r in rows])
    assert out.read_bytes() == (tmp_path / "mem.jsonl").read_bytes()


# ------------------------------------------------------------------------ judge endpoint answers

#: A model judge's endpoint is outside input too (docs/JUDGES.md): each body a hostile or broken
#: endpoint may send (names of tests/judges/_server.py's faults, or bytes sent as they are) leaves
#: the row unanswered with the reason (the run: exit 2 naming it), memory bounded (capped subprocess).
CHAT = '{{"choices": [{{"index": {v}, "message": {{"role": "assistant", "content": "{{}}"}}}}]}}'
JUDGE_RESPONSES = [
    ("nested JSON", CHAT.format(v=NESTED).encode(), "nested deeper than"),
    ("400-digit number", CHAT.format(v=HUGE).encode(), "digits"),
    ("endless body", "endless", "response over 16 MiB"),
    ("10 GB announced", "huge", "response over 16 MiB"),
    ("not UTF-8", "notutf8", "not UTF-8"),
    ("not a chat completion", b'{"choices": "[bold]x[/bold]"}', "not a chat completion"),
]


@pytest.mark.parametrize(("body", "expect"), [pytest.param(b, e, id=n) for n, b, e in JUDGE_RESPONSES])
def test_a_hostile_judge_answer_is_a_named_unanswered_row(body, expect, tmp_path):
    from tests.judges._server import JudgeServer

    good = _good_files(tmp_path)
    with JudgeServer(None) as server:
        server.faults.extend([body] * 4)
        code, out = _run_capped("cli", ["score", "-i", good["rows"], "-m", "clair", "--judge-url", server.url,
                                        "--judge-model", "m", "-O", "clair.retries=1", "-O", "clair.backoff=0",
                                        "-O", "clair.concurrency=1", "-q"], False)
    flat = " ".join(out.split())
    assert code == 2 and "Traceback" not in out, out[-3000:]
    assert "2 of 2 rows unanswered" in flat and "row 0" in flat and expect in flat, flat[-2000:]
