"""A streamed run killed midway resumes from its complete chunks and writes the same bytes."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from capeval import score_stream
from capeval.stream.store import RunStore

from ._rows import make_rows, write_jsonl

METRICS = "bleu4,rouge_l,cider_d,meteor,ter"  # totals (BLEU, METEOR), ordered columns (TER), means


def _cli(args, **kw):
    code = "from capeval.cli.main import main; main()"
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, **kw)


@pytest.mark.slow
def test_killed_run_resumes_with_identical_bytes(tmp_path):
    rows = make_rows(4000, seed=5)
    src = tmp_path / "rows.jsonl"
    write_jsonl(src, rows)
    # Uninterrupted run for comparison.
    full = tmp_path / "full.jsonl"
    proc = _cli(["score", "-i", str(src), "-m", METRICS, "-o", str(full), "--chunk-size", "100", "-q"])
    assert proc.wait(timeout=300) == 0, proc.stderr.read().decode()

    out = tmp_path / "out.jsonl"
    run_dir = tmp_path / "out.jsonl.capeval-run"
    proc = _cli(["score", "-i", str(src), "-m", METRICS, "-o", str(out), "--chunk-size", "100", "-q"])
    deadline = time.time() + 300
    while time.time() < deadline:
        done = list(run_dir.glob("chunk-*.bin")) if run_dir.exists() else []
        if len(done) >= 3 or proc.poll() is not None:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not out.exists(), "the run finished before it could be killed"
    complete = sorted(run_dir.glob("chunk-*.bin"))
    assert 3 <= len(complete) < 40
    # A half-written chunk (temporary name) and a damaged one must not be counted.
    (run_dir / ".chunk-0000039.bin.tmp-1").write_bytes(b"CAPEVAL-CHUNK/1\npartial")
    damaged = complete[-1]
    damaged.write_bytes(damaged.read_bytes()[:-10])

    scored = []
    res = score_stream(src, METRICS.split(","), output=out, chunk_size=100,
                       progress=lambda stage, n: scored.append((stage, n)))
    assert out.read_bytes() == full.read_bytes()
    assert out.with_suffix(".signatures.json").read_bytes() == full.with_suffix(".signatures.json").read_bytes()
    assert res.n == 4000 and not run_dir.exists()
    # Reused chunks are not scored again: the damaged one is, with the 40 - len(complete) never written.
    rescored = max(n for stage, n in scored if stage == "score")
    assert rescored == 100 * (40 - len(complete) + 1)


def test_store_ignores_other_settings_and_damage(tmp_path):
    store = RunStore(tmp_path / "r", {"a": 1})
    key = store.chunk_key("digest", "df")
    store.save(0, key, {"x": 1})
    assert store.load(0, key) == {"x": 1}
    assert store.load(0, store.chunk_key("other rows", "df")) is None
    p = tmp_path / "r" / "chunk-0000000.bin"
    data = bytearray(p.read_bytes())
    data[-1] ^= 1
    p.write_bytes(bytes(data))
    assert store.load(0, key) is None
    store.save(0, key, {"x": 1})
    store.close()  # its lock
    RunStore(tmp_path / "r", {"a": 2}).close()  # a run with other settings clears the old chunks
    assert not p.exists()


def test_kill_during_df_pass_is_redone(tmp_path):
    rows = make_rows(600, seed=9)
    src = tmp_path / "rows.jsonl"
    write_jsonl(src, rows)
    run_dir = tmp_path / "o.jsonl.capeval-run"
    # Simulate a df pass that died after writing arrays but before its metadata.
    run_dir.mkdir()
    (run_dir / "df_keys.npy").write_bytes(b"garbage")
    a = score_stream(src, ["cider_d"], output=tmp_path / "o.jsonl", chunk_size=100)
    b = score_stream(src, ["cider_d"], chunk_size=1000)
    assert a.corpus == b.corpus
    assert os.listdir(tmp_path) .count("o.jsonl.capeval-run") == 0


class _Killed(Exception):
    pass


def test_df_pass_resumes_from_its_checkpoint(tmp_path):
    from capeval import score

    rows = make_rows(1000, seed=13)
    src = tmp_path / "rows.jsonl"
    write_jsonl(src, rows)
    out = tmp_path / "o.jsonl"

    def die_after_4(stage, n):
        if stage == "df" and n >= 400:
            raise _Killed

    with pytest.raises(_Killed):
        score_stream(src, ["cider_d", "bleu4"], output=out, chunk_size=100, checkpoint_seconds=0,
                     progress=die_after_4)
    assert (tmp_path / "o.jsonl.capeval-run" / "dfck.json").exists() and not out.exists()
    seen = []
    res = score_stream(src, ["cider_d", "bleu4"], output=out, chunk_size=100,
                       progress=lambda stage, n: seen.append((stage, n)))
    assert seen[0] == ("df", 400)  # chunks 0-2 from the checkpoint (chunk 3 died before its own)
    ref = score([r["candidate"] for r in rows], [r["references"] for r in rows], ["cider_d", "bleu4"])
    assert res.corpus == ref.corpus and res.signatures == ref.signatures
