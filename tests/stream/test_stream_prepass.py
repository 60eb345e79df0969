"""Families other than CIDEr with a corpus pre-pass (``Metric.prepass``) stream: BERTScore with
idf gets the reference counts of the whole input, computed chunk by chunk in the first pass,
merged with ``+``, saved in the run folder and resumed after a kill, and gives the in-memory
numbers, signatures and file bytes on any chunking and engine."""
from __future__ import annotations

import json
import signal
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

import capeval
from capeval import score_stream
from capeval.cli.main import app
from capeval.inputs import read_jsonl, write_result
from capeval.metrics.registry import get_family
from tests._needs import family_needs

from ._rows import assert_same_result as _same, make_rows, write_jsonl

pytestmark = pytest.mark.needs(*family_needs(get_family("bertscore")))

IDF = {"bertscore": {"idf": True, "padding_floor": False}}
NAMES = ["bertscore_p", "bertscore_r", "bertscore_f"]


def _in_memory(rows, names, options):
    return capeval.score([r["candidate"] for r in rows], [r["references"] for r in rows], names,
                         ids=[r["id"] for r in rows], options=options)


@pytest.fixture(scope="module")
def rows():
    return make_rows(40, seed=34)


@pytest.fixture(scope="module")
def mem(rows):
    return _in_memory(rows, [*NAMES, "cider_d"], IDF)


@pytest.mark.parametrize("chunk_size,jobs", [(1, 1), (7, 2), (1000, 1), (13, 1)])
def test_bertscore_idf_streams_with_the_in_memory_numbers(tmp_path, rows, mem, chunk_size, jobs):
    p = tmp_path / "in.jsonl"
    write_jsonl(p, rows)
    names = NAMES if chunk_size != 13 else [*NAMES, "cider_d"]  # beside CIDEr's own df pass
    got = score_stream(p, names, options=IDF, chunk_size=chunk_size, jobs=jobs, keep_per_caption=True)
    _same(mem, got, names)
    # Each chunk weighing by its own references would give other numbers: the pre-pass matters.
    alone = _in_memory(rows[:7], ["bertscore_f"], IDF)
    assert not np.array_equal(alone.per_caption["bertscore_f"], mem.per_caption["bertscore_f"][:7])


def test_the_prepassed_families_are_in_the_run_fingerprint():
    from capeval.plan import ScoringPlan
    from capeval.stream.run import _settings

    def settings(opts):
        return _settings(ScoringPlan.build(["bertscore_f", "cider_d"], options=opts), False, "space", None)[0]

    with_idf, without = settings(IDF), settings({"bertscore": {"idf": False, "padding_floor": False}})
    assert with_idf.prepassed == ("bertscore",) and without.prepassed == ()
    assert "prepassed=('bertscore',)" in repr(with_idf) and repr(with_idf) != repr(without)


class _Killed(Exception):
    pass


def test_prepass_resumes_from_its_checkpoint(tmp_path, rows, mem):
    src = tmp_path / "rows.jsonl"
    write_jsonl(src, rows)
    out = tmp_path / "o.jsonl"
    run_dir = tmp_path / "o.jsonl.capeval-run"
    names = [*NAMES, "cider_d"]

    with pytest.raises(_Killed):
        score_stream(src, names, options=IDF, output=out, chunk_size=5, checkpoint_seconds=0, progress=_die_at_20)
    assert (run_dir / "prepassck-0000000.bin").exists() and (run_dir / "dfck.json").exists() and not out.exists()
    seen = []
    res = score_stream(src, names, options=IDF, output=out, chunk_size=5, keep_per_caption=True,
                       progress=lambda stage, n: seen.append((stage, n)))
    assert seen[0] == ("df", 20)  # chunks 0-2 from the checkpoint (chunk 3 died before its own)
    _same(mem, res, names)
    assert not run_dir.exists()


def _die_at_20(stage, n):
    if stage == "df" and n >= 20:
        raise _Killed


def test_a_df_checkpoint_without_its_prepass_part_restarts(tmp_path, rows, mem):
    """The df and pre-pass checkpoints are saved one after the other: with one of them damaged
    (or left at another chunk count by a kill in between), the first pass starts over."""
    from capeval.stream.store import RunStore

    src = tmp_path / "rows.jsonl"
    write_jsonl(src, rows)
    out = tmp_path / "o.jsonl"
    names = [*NAMES, "cider_d"]
    with pytest.raises(_Killed):
        score_stream(src, names, options=IDF, output=out, chunk_size=5, checkpoint_seconds=0, progress=_die_at_20)
    run_dir = tmp_path / "o.jsonl.capeval-run"
    ck = next(run_dir.glob("prepassck-*"))
    ck.write_bytes(ck.read_bytes()[:-3])  # damaged: the df checkpoint alone is not resumed
    seen = []
    res = score_stream(src, names, options=IDF, output=out, chunk_size=5, keep_per_caption=True,
                       progress=lambda stage, n: seen.append((stage, n)))
    assert seen[0] == ("df", 5)
    _same(mem, res, names)
    assert RunStore.prepass_digest({"a": 1}) != RunStore.prepass_digest({"a": 2})


_KILLER = """
import os, signal, sys
from capeval import score_stream

def progress(stage, n):
    if stage == "df" and n >= int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)

score_stream(sys.argv[1], ["bertscore_f"], options={"bertscore": {"idf": True, "padding_floor": False}},
             output=sys.argv[2], chunk_size=5, checkpoint_seconds=0, progress=progress)
"""


def test_kill_9_during_the_prepass_resumes_with_identical_bytes(tmp_path, rows):
    src = tmp_path / "rows.jsonl"
    write_jsonl(src, rows)
    out = tmp_path / "o.jsonl"
    proc = subprocess.run([sys.executable, "-c", _KILLER, str(src), str(out), "25"], capture_output=True,
                          timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    run_dir = tmp_path / "o.jsonl.capeval-run"
    assert (run_dir / "prepassck-0000000.bin").exists() and not out.exists()
    seen = []
    score_stream(src, ["bertscore_f"], options=IDF, output=out, chunk_size=5,
                 progress=lambda stage, n: seen.append((stage, n)))
    assert seen[0] == ("df", 25)  # chunks 0-3 from the checkpoint
    mem = _in_memory(rows, ["bertscore_f"], IDF)
    write_result(mem, tmp_path / "mem.jsonl", [r["id"] for r in rows])
    assert out.read_bytes() == (tmp_path / "mem.jsonl").read_bytes()
    assert out.with_name("o.signatures.json").read_bytes() == (tmp_path / "mem.signatures.json").read_bytes()


@pytest.mark.parametrize("chunking", [[], ["--chunk-size", "9"]], ids=["one-chunk", "chunks-of-9"])
def test_cli_jobs_2_with_idf_writes_the_in_memory_bytes(tmp_path, rows, chunking):
    src = tmp_path / "x.jsonl"
    write_jsonl(src, rows)
    out = tmp_path / "out.jsonl"
    res = CliRunner().invoke(app, ["score", "--input", str(src), "-m", "bertscore_f", "-O", "bertscore.idf=true",
                                   "-O", "bertscore.padding_floor=false", "--jobs", "2", *chunking,
                                   "-o", str(out), "-q"])
    assert res.exit_code == 0, res.output
    ids, cands, refs = read_jsonl(src)
    mem = capeval.score(cands, refs, ["bertscore_f"], ids=ids, options=IDF)
    write_result(mem, tmp_path / "mem.jsonl", ids)
    assert out.read_bytes() == (tmp_path / "mem.jsonl").read_bytes()
    assert out.with_name("out.signatures.json").read_bytes() == (tmp_path / "mem.signatures.json").read_bytes()


@pytest.mark.slow
def test_ray_ships_the_prepass_states(tmp_path, rows, mem):
    ray = pytest.importorskip("ray")
    p = tmp_path / "in.jsonl"
    write_jsonl(p, rows)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        got = score_stream(p, [*NAMES, "cider_d"], options=IDF, engine="ray", chunk_size=9, keep_per_caption=True)
    finally:
        ray.shutdown()
    _same(mem, got, [*NAMES, "cider_d"])


def test_a_run_killed_in_the_score_pass_reuses_its_prepass_and_chunks(tmp_path, rows):
    """The saved pre-pass states give the same chunk keys in the resumed run (their digest is
    stable across processes), so the chunks scored before the kill are not scored again."""
    src = tmp_path / "rows.jsonl"
    write_jsonl(src, rows)
    out = tmp_path / "o.jsonl"

    def die_in_score_pass(stage, n):
        if stage == "score" and n >= 15:
            raise _Killed

    with pytest.raises(_Killed):
        score_stream(src, NAMES, options=IDF, output=out, chunk_size=5, progress=die_in_score_pass)
    assert (tmp_path / "o.jsonl.capeval-run" / "prepass-0000000.bin").exists()
    code = ("import sys, json\nfrom capeval import score_stream\nseen = []\n"
            "score_stream(sys.argv[1], json.loads(sys.argv[2]), options=json.loads(sys.argv[3]), output=sys.argv[4],"
            " chunk_size=5, progress=lambda stage, n: seen.append([stage, n]))\nprint(json.dumps(seen))")
    proc = subprocess.run([sys.executable, "-c", code, str(src), json.dumps(NAMES), json.dumps(IDF), str(out)],
                          capture_output=True, timeout=300, text=True)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not any(stage == "df" for stage, _ in seen)  # the saved states are reused
    assert max(n for stage, n in seen if stage == "score") == 40 - 15  # chunks 0-2 are reused
    write_result(_in_memory(rows, NAMES, IDF), tmp_path / "mem.jsonl", [r["id"] for r in rows])
    assert out.read_bytes() == (tmp_path / "mem.jsonl").read_bytes()


def test_a_lost_prepass_file_is_counted_again_beside_the_saved_df(tmp_path, rows, mem, monkeypatch):
    src = tmp_path / "rows.jsonl"
    write_jsonl(src, rows)
    out = tmp_path / "o.jsonl"
    names = [*NAMES, "cider_d"]

    def die_in_score_pass(stage, n):
        if stage == "score" and n >= 10:
            raise _Killed

    with pytest.raises(_Killed):
        score_stream(src, names, options=IDF, output=out, chunk_size=5, progress=die_in_score_pass)
    run_dir = tmp_path / "o.jsonl.capeval-run"
    (run_dir / "prepass-0000000.bin").unlink()
    from capeval.stream.dfstore import DfAccumulator

    counted = []
    monkeypatch.setattr(DfAccumulator, "add", lambda self, *a: counted.append(a))
    seen = []
    res = score_stream(src, names, options=IDF, output=out, chunk_size=5, keep_per_caption=True,
                       progress=lambda stage, n: seen.append((stage, n)))
    assert ("df", 40) in seen and not counted  # the states again; the df is the saved one
    assert max(n for stage, n in seen if stage == "score") == 30  # chunks 0-1 reused (same states)
    _same(mem, res, names)
