"""A run folder belongs to one run (issue 41): nothing in it is unpickled, its files are bound to
the run by an HMAC keyed with the run's secret, it is locked for the run and must be the
user's own, the input is identified by its content, and damaged pieces heal."""
from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import pickle
import struct

import numpy as np
import pytest

from capeval import score, score_stream
from capeval.errors import CapevalError, InputError
from capeval.inputs import write_result
from capeval.stream import codec
from capeval.stream.store import _MAGIC, RunStore

from ._rows import make_rows, write_jsonl

METRICS = ["bleu4", "cider_d"]


class _Stop(Exception):
    pass


def _expected(tmp_path, rows, name="mem.jsonl") -> bytes:
    res = score([r["candidate"] for r in rows], [r["references"] for r in rows], METRICS, ids=[r["id"] for r in rows])
    out = tmp_path / name
    write_result(res, out, [r["id"] for r in rows])
    return out.read_bytes()


def _stopped(src, out, scored: int = 200, **kw):
    """A run stopped after ``scored`` rows of the score pass: its folder stays, for a resume."""
    def progress(stage, n):
        if stage == "score" and n >= scored:
            raise _Stop

    with pytest.raises(_Stop):
        score_stream(src, METRICS, output=out, chunk_size=100, progress=progress, **kw)
    run_dir = out.with_name(out.name + ".capeval-run")
    assert (run_dir / "df.json").exists() and (run_dir / "chunk-0000001.bin").exists()
    return run_dir


@pytest.fixture
def rows():
    return make_rows(400, seed=41)


@pytest.fixture
def src(tmp_path, rows):
    p = tmp_path / "in.jsonl"
    write_jsonl(p, rows)
    return p


class _Boom:
    """The issue's payload: unpickling it runs a shell command."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("name", ["chunk-0000001.bin", "prep-0000003.bin"])
@pytest.mark.parametrize("magic", [b"CAPEVAL-CHUNK/1\n", _MAGIC])
def test_a_planted_pickle_never_runs(tmp_path, rows, src, name, magic):
    out = tmp_path / "out.jsonl"
    run_dir = _stopped(src, out)
    marker = tmp_path / "pwned"
    p = pickle.dumps(("x", _Boom(marker)))
    (run_dir / name).write_bytes(magic + hashlib.sha256(p).hexdigest().encode() + b"\n" + p)
    score_stream(src, METRICS, output=out, chunk_size=100)
    assert not marker.exists()
    assert out.read_bytes() == _expected(tmp_path, rows)


def test_a_planted_pickle_in_spilled_rows_never_runs(tmp_path, rows):
    """A one-shot iterator's rows are kept in the run folder for the second pass."""
    marker = tmp_path / "pwned"
    run_dir = tmp_path / "run"

    def progress(stage, n):
        if stage == "df" and n == 100:
            p = pickle.dumps(("x", _Boom(marker)))
            (run_dir / "input-0000002.bin").write_bytes(_MAGIC + hashlib.sha256(p).hexdigest().encode() + b"\n" + p)

    items = iter([(r["id"], r["candidate"], r["references"]) for r in rows])
    with pytest.raises(InputError, match="rows kept for the second pass"):
        score_stream(items, METRICS, chunk_size=100, run_dir=run_dir, progress=progress)
    assert not marker.exists()


def _rewrite(path, secret: bytes | None, change) -> None:
    """The chunk file at ``path`` with ``change`` applied to its result, signed with ``secret``
    (another run's), or with a plain SHA-256 when None (the checksum anyone can recompute)."""
    payload = path.read_bytes()[len(_MAGIC) + 65:]
    key, obj = codec.decode(payload, lambda cls: True)
    change(obj)
    new = codec.encode((key, obj), lambda cls: True)
    mac = hashlib.sha256(new).hexdigest() if secret is None else hmac.new(secret, path.name.encode() + b"\0" + new,
                                                                          hashlib.sha256).hexdigest()
    path.write_bytes(_MAGIC + mac.encode() + b"\n" + new)


def _double(res) -> None:
    res.per_caption["cider_d"] = res.per_caption["cider_d"] * 2
    st = res.stats["cider_d"]
    st.rows = {k: v * 2 for k, v in st.rows.items()}


@pytest.mark.parametrize("secret", [None, b"another run's secret"], ids=["sha256", "foreign hmac"])
def test_a_chunk_rewritten_with_a_recomputed_checksum_is_scored_again(tmp_path, rows, src, secret):
    out = tmp_path / "out.jsonl"
    run_dir = _stopped(src, out)
    _rewrite(run_dir / "chunk-0000001.bin", secret, _double)
    score_stream(src, METRICS, output=out, chunk_size=100)
    assert out.read_bytes() == _expected(tmp_path, rows)


def test_a_chunk_copied_to_another_index_is_not_taken(tmp_path, rows, src):
    out = tmp_path / "out.jsonl"
    run_dir = _stopped(src, out)
    (run_dir / "chunk-0000001.bin").write_bytes((run_dir / "chunk-0000000.bin").read_bytes())
    score_stream(src, METRICS, output=out, chunk_size=100)
    assert out.read_bytes() == _expected(tmp_path, rows)


def test_the_codec_rebuilds_only_allowed_classes():
    from capeval.metrics.statistics import RowMean, Statistics

    st = Statistics(2, RowMean(("x",)), {"x": np.array([0.5, np.nan])}, {"t": np.array([3], dtype=np.int64)},
                    {"n": 4, "s": "a|b", "f": np.float64(0.25)})
    value = {"st": st, 1: (b"\x00", frozenset({2}), [np.int64(7), float("inf")]), "u": np.array(["a", "b"], dtype=object)}
    back = codec.decode(codec.encode(value, lambda c: c in (Statistics, RowMean)), lambda c: c in (Statistics, RowMean))
    assert back["st"].aggregate == st.aggregate and back["st"].fields == st.fields
    assert type(back["st"].fields["f"]) is np.float64
    assert np.array_equal(back["st"].rows["x"], st.rows["x"], equal_nan=True)
    assert back[1] == value[1] and type(back[1][2][0]) is np.int64 and back["u"].tolist() == ["a", "b"]
    with pytest.raises(codec.Unstorable, match="may not hold"):
        codec.encode(st, lambda c: False)
    with pytest.raises(codec.Unstorable):
        codec.encode(np.array([object()]), lambda c: True)
    # A class the reader does not allow is never built; a function is never called, whatever
    # the reader allows.
    with pytest.raises(codec.Unstorable, match="may not hold"):
        codec.decode(codec.encode(st, lambda c: True), lambda c: c is RowMean)
    text = json.dumps({"v": ["o", "os:system", ["t", ["touch pwned"]]], "arrays": []}).encode()
    with pytest.raises(codec.Unstorable, match="os:system"):
        codec.decode(struct.pack("<Q", len(text)) + text, lambda c: True)


def test_two_runs_cannot_share_a_run_folder(tmp_path, rows, src):
    """The issue's reproduction: run 2 (other rows, same options and folder) starts while run 1
    is scoring with two workers. Run 2 is refused; run 1's numbers are right."""
    other = tmp_path / "b.jsonl"
    write_jsonl(other, make_rows(300, seed=5))
    run_dir = tmp_path / "shared"
    refused = []

    def progress(stage, n):
        if stage == "score" and not refused:
            with pytest.raises(InputError, match="another run is using this run folder") as e:
                score_stream(other, METRICS, output=tmp_path / "b_out.jsonl", chunk_size=100, run_dir=run_dir)
            refused.append(str(e.value))

    out = tmp_path / "a_out.jsonl"
    score_stream(src, METRICS, output=out, chunk_size=100, jobs=2, run_dir=run_dir, progress=progress)
    assert refused and not (tmp_path / "b_out.jsonl").exists()
    assert out.read_bytes() == _expected(tmp_path, rows)
    # the folder is free again
    score_stream(other, METRICS, output=tmp_path / "b_out.jsonl", chunk_size=100, run_dir=run_dir)


def test_a_run_folder_is_the_users_own(tmp_path, src):
    seen = []

    def progress(stage, n):
        d = tmp_path / "out.jsonl.capeval-run"
        seen.append((oct(d.stat().st_mode & 0o777), oct((d / "run.key").stat().st_mode & 0o777)))

    score_stream(src, METRICS, output=tmp_path / "out.jsonl", chunk_size=100, progress=progress)
    assert set(seen) == {("0o700", "0o600")}
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run_dir.chmod(0o777)
    with pytest.raises(InputError, match="writable by other users"):
        score_stream(src, METRICS, output=tmp_path / "o.jsonl", chunk_size=100, run_dir=run_dir)
    run_dir.chmod(0o700)
    if os.getuid() == 0:  # only root can give a folder away
        os.chown(run_dir, 12345, -1)
        with pytest.raises(InputError, match="belongs to user id 12345"):
            score_stream(src, METRICS, output=tmp_path / "o.jsonl", chunk_size=100, run_dir=run_dir)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(InputError, match="symbolic link"):
        score_stream(src, METRICS, output=tmp_path / "o.jsonl", chunk_size=100, run_dir=link)
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "elsewhere").exists()


def test_an_input_edited_with_its_size_and_mtime_kept_is_another_input(tmp_path, rows, src):
    out = tmp_path / "out.jsonl"
    _stopped(src, out)
    st = src.stat()
    for r in rows[150:300]:
        c = r["candidate"]
        r["candidate"] = c[1:] + c[0]  # the same bytes, in another order
    write_jsonl(src, rows)
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (src.stat().st_size, src.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    score_stream(src, METRICS, output=out, chunk_size=100)
    assert out.read_bytes() == _expected(tmp_path, rows)


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_input_that_grows_between_the_passes_is_refused(tmp_path, rows, src, jobs):
    grown = []

    def progress(stage, n):
        if stage == "score" and not grown:
            with src.open("a") as f:
                f.write("".join(json.dumps({**r, "id": f"x{r['id']}"}) + "\n" for r in rows[:100]))
            grown.append(n)

    out = tmp_path / "out.jsonl"
    with pytest.raises(InputError, match="changed while it was being scored"):
        score_stream(src, METRICS, output=out, chunk_size=100, jobs=jobs, progress=progress)
    assert grown and not out.exists()
    score_stream(src, METRICS, output=out, chunk_size=100)  # resumed: the grown input, counted again
    grown_rows = rows + [{**r, "id": f"x{r['id']}"} for r in rows[:100]]
    assert out.read_bytes() == _expected(tmp_path, grown_rows)


def _truncate_df_json(run_dir):
    p = run_dir / "df.json"
    p.write_bytes(p.read_bytes()[:20])


def _empty_df_counts(run_dir):
    (p,) = run_dir.glob("df-*-counts.npy")
    p.write_bytes(b"")


def _garbage_key(run_dir):
    (run_dir / "run.key").write_text("not a key")


def _planted_df_name(run_dir):
    p = run_dir / "df.json"
    info = json.loads(p.read_text())
    info["files"] = ["../../etc/passwd", info["files"][1]]
    p.write_text(json.dumps(info))


@pytest.mark.parametrize("damage", [_truncate_df_json, _empty_df_counts, _garbage_key, _planted_df_name],
                         ids=lambda f: f.__name__.strip("_"))
def test_a_damaged_run_folder_heals(tmp_path, rows, src, damage):
    out = tmp_path / "out.jsonl"
    damage(_stopped(src, out))
    score_stream(src, METRICS, output=out, chunk_size=100)
    assert out.read_bytes() == _expected(tmp_path, rows)


def test_the_resources_a_family_reads_are_in_the_fingerprint(tmp_path, monkeypatch):
    """Pointing CAPEVAL_GLOVE_6B_50D at other vectors makes another run (its chunks are not
    resumed, so their statistics never meet the new ones')."""
    from capeval.plan import ScoringPlan
    from capeval.stream.run import _resources

    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("the 0.1 0.2\n")
    b.write_text("the 0.3 0.4 0.5\n")
    plan = ScoringPlan.build(["wmd", "bleu4"])
    monkeypatch.setenv("CAPEVAL_GLOVE_6B_50D", str(a))
    first = _resources(plan)
    monkeypatch.setenv("CAPEVAL_GLOVE_6B_50D", str(b))
    assert _resources(plan)["wmd"] != first["wmd"] and _resources(plan)["bleu"] == first["bleu"]


def test_a_full_disk_while_writing_the_df_is_a_named_error(tmp_path, src, monkeypatch):
    def full(fd, offset, size):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    out = tmp_path / "out.jsonl"
    with pytest.raises(CapevalError, match="could not be written to the run folder: No space left on device"):
        score_stream(src, METRICS, output=out, chunk_size=100)
    run_dir = tmp_path / "out.jsonl.capeval-run"
    assert not out.exists() and not [p for p in run_dir.iterdir() if p.name.startswith((".df", "df-"))]


def test_a_full_tmpfs_while_writing_the_df_is_a_named_error(tmp_path, src):
    """The issue's SIGBUS: a real file system that fills up (a 64 KiB tmpfs; needs root)."""
    import subprocess
    import sys

    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.getuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                                          capture_output=True, check=False).returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    try:
        rows = make_rows(3000, seed=3)
        write_jsonl(src, rows)
        code = ("import sys\nfrom capeval import score_stream\nfrom capeval.errors import CapevalError\n"
                "try:\n    score_stream(sys.argv[1], ['cider_d'], output=sys.argv[2], chunk_size=500, run_dir=sys.argv[3])\n"
                "except CapevalError as e:\n    print('NAMED:', e)\n    sys.exit(2)\n")
        proc = subprocess.run([sys.executable, "-c", code, str(src), str(tmp_path / "o.jsonl"), str(mnt / "run")],
                              capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr[-2000:])
        assert "NAMED:" in proc.stdout and "No space left on device" in proc.stdout
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_store_files_hold_no_pickle(tmp_path):
    """What a run writes is JSON and .npy bytes: the pickle opcodes never appear at the start."""
    store = RunStore(tmp_path / "r", {"a": 1})
    try:
        store.save(0, "k", {"x": [1, 2]})
        data = (tmp_path / "r" / "chunk-0000000.bin").read_bytes()
        assert data.startswith(_MAGIC) and b"\x80\x04" not in data and b"\x80\x05" not in data
        assert store.load(0, "k") == {"x": [1, 2]}
    finally:
        store.remove()


@pytest.mark.slow
def test_an_input_that_grows_between_the_passes_is_refused_on_ray(tmp_path, rows, src):
    """The issue's Ray case: 100 rows appended after the df pass were scored with the df of
    the first 300 (CIDEr-D 0.8345 instead of 0.8275)."""
    ray = pytest.importorskip("ray")
    grown = []

    def progress(stage, n):
        if stage == "score" and not grown:
            with src.open("a") as f:
                f.write("".join(json.dumps({**r, "id": f"x{r['id']}"}) + "\n" for r in rows[:100]))
            grown.append(n)

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with pytest.raises(InputError, match="changed while it was being scored"):
            score_stream(src, METRICS, output=tmp_path / "out.jsonl", chunk_size=100, engine="ray", progress=progress)
    finally:
        ray.shutdown()
    assert grown and not (tmp_path / "out.jsonl").exists()
