"""A streamed ``capeval score -m clair --judge-url ...`` killed (SIGKILL) while the judge holds a
request resumes to the bytes of an uninterrupted run, and the resumed run asks the judge only
what was never answered (finished chunks from the run folder, the rest of the killed chunk
from the response cache). ``--jobs 2`` writes the same bytes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

CANDS = ["a dog runs on the grass", "two cats sleep", "a red bus on the street", "a man rides a horse",
         "children play football", "a plate of food"]
REFS = [["a dog running"], ["cats sleeping", "two cats"], ["a bus in a city"], ["a rider on a horse"],
        ["kids playing soccer"], ["food on a plate", "a meal"]]


def _input(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"r{k}", "candidate": c, "references": r}) + "\n"
                           for k, (c, r) in enumerate(zip(CANDS, REFS))))
    return src


def _cli(server, src, out, cache, *extra):
    args = ["score", "-i", str(src), "-m", "clair", "--judge-url", server.url, "--judge-model", "tiny-judge",
            "-O", "clair.max_tokens=24", "-O", "clair.concurrency=1", "-o", str(out), "--chunk-size", "2", "-q",
            *extra]
    env = dict(os.environ, CAPEVAL_CACHE=str(cache))
    return subprocess.Popen([sys.executable, "-c", "from capeval.cli.main import main; main()", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def _finish(proc) -> None:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err


def _prompts(bodies) -> list[str]:
    return [b["messages"][-1]["content"] for b in bodies]


def test_a_killed_judge_run_resumes_to_the_same_bytes_asking_nothing_twice(server, tmp_path):
    src = _input(tmp_path)
    full = tmp_path / "full.jsonl"
    _finish(_cli(server, src, full, tmp_path / "cache-full"))
    assert server.requests == len(CANDS)

    # the sixth request (row 5, in the third chunk of two rows) is held until the run is killed
    server.requests, server.bodies = 0, []
    server.block_after = 5
    out, cache = tmp_path / "out.jsonl", tmp_path / "cache"
    proc = _cli(server, src, out, cache)
    deadline = time.time() + 300
    while server.requests < 6 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    assert server.requests == 6, "the run ended before it reached the held request"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    server.release.set()
    assert not out.exists()
    run_dir = tmp_path / "out.jsonl.capeval-run"
    assert len(list(run_dir.glob("chunk-*.bin"))) == 2  # rows 0-3; row 4's answer is in the cache only
    answered = _prompts(server.bodies[:5])

    server.block_after, server.bodies = None, []
    _finish(_cli(server, src, out, cache))
    assert out.read_bytes() == full.read_bytes()
    assert (tmp_path / "out.signatures.json").read_bytes() == (tmp_path / "full.signatures.json").read_bytes()
    assert not run_dir.exists()
    resent = _prompts(server.bodies)
    assert len(resent) == 1 and resent[0] not in answered  # only row 5, whose answer never came
    assert "unans:0" in json.loads((tmp_path / "out.signatures.json").read_text())["signatures"]["clair"]


@pytest.mark.slow
def test_judges_shard_over_two_jobs_with_the_same_bytes(server, tmp_path):
    src = _input(tmp_path)
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    _finish(_cli(server, src, one, tmp_path / "cache-1"))
    sent = server.requests
    _finish(_cli(server, src, two, tmp_path / "cache-2", "--jobs", "2"))
    assert server.requests - sent == len(CANDS)  # each row asked once, by one of the two workers
    assert two.read_bytes() == one.read_bytes()
    assert (tmp_path / "two.signatures.json").read_bytes() == (tmp_path / "one.signatures.json").read_bytes()


def test_a_streamed_run_stopped_by_unanswered_rows_asks_them_again_when_rerun(server, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from capeval.cli.main import app

    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    src, out = _input(tmp_path), tmp_path / "out.jsonl"
    argv = ["score", "-i", str(src), "-m", "clair", "--judge-url", server.url, "--judge-model", "tiny-judge",
            "-O", "clair.max_tokens=24", "-O", "clair.concurrency=1", "-O", "clair.retries=0", "-o", str(out),
            "--chunk-size", "2", "-q"]
    server.faults.extend([None] * 4 + ["500"])  # row 4, the third chunk's first: the endpoint is down a moment
    res = CliRunner().invoke(app, argv)
    flat = " ".join(res.output.split())
    # the chunk stops the run, naming its rows in the input
    assert res.exit_code == 2 and "1 of 2 rows unanswered" in flat and "row 0: HTTP 500" in flat, flat
    assert "[in input rows 4-5; item numbers above count from the first of them]" in flat, flat
    assert server.requests == 6  # the run stops at the end of that chunk
    res = CliRunner().invoke(app, argv)  # the same command once the endpoint is back
    assert res.exit_code == 0, res.output
    assert server.requests == 6 + 1  # row 4 only: row 5 from the cache, rows 0-3 from the run folder
    assert all(json.loads(line)["clair"] is not None for line in out.read_text().splitlines())


def test_a_streamed_runs_allowance_is_the_whole_runs(server, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from capeval.cli.main import app

    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    src, out = _input(tmp_path), tmp_path / "out.jsonl"
    argv = ["score", "-i", str(src), "-m", "clair", "--judge-url", server.url, "--judge-model", "tiny-judge",
            "-O", "clair.max_tokens=24", "-O", "clair.concurrency=1", "-O", "clair.retries=0", "-o", str(out),
            "--chunk-size", "2", "-q", "--judge-allow-unanswered", "1"]
    server.faults.extend(["500"] + [None] * 3 + ["500"])  # rows 0 and 4: one per chunk, two in the run
    res = CliRunner().invoke(app, argv)
    flat = " ".join(res.output.split())
    assert res.exit_code == 2 and "2 of 6 rows unanswered" in flat and "first: row 0: HTTP 500" in flat, flat
    assert "Traceback" not in res.output and not out.exists()
