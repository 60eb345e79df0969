"""``capeval score -m clair --judge-url ... --judge-model ...`` end to end against the loopback
server; a second run sends no request (cache); unanswered rows fail the run with exit 2 unless
allowed."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from capeval.cli.main import app


def _input(tmp_path):
    src = tmp_path / "in.jsonl"
    rows = [{"id": f"r{k}", "candidate": c, "references": refs} for k, (c, refs) in enumerate([
        ("a dog runs on the grass", ["a dog running"]), ("two cats sleep", ["cats sleeping", "two cats"])])]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return src


def test_score_clair_against_the_endpoint_then_from_the_cache(server, tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    src, out = _input(tmp_path), tmp_path / "out.json"
    args = ["score", "-i", str(src), "-m", "clair", "--judge-url", server.url, "--judge-model", "tiny-judge",
            "-O", "clair.max_tokens=24", "-q"]
    res = CliRunner().invoke(app, [*args, "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert server.requests == 2
    first = json.loads(out.read_text())
    assert "backend:http|judge:tiny-judge" in first["signatures"]["clair"]
    res = CliRunner().invoke(app, [*args, "-o", str(out), "--overwrite"])
    assert res.exit_code == 0, res.output
    assert server.requests == 2  # nothing sent: every answer came from the cache
    assert json.loads(out.read_text())["per_caption"] == first["per_caption"]


def test_unanswered_rows_exit_2_unless_allowed(server, tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    src = _input(tmp_path)
    args = ["score", "-i", str(src), "-m", "clair", "--judge-url", server.url, "--judge-model", "tiny-judge",
            "-O", "clair.max_tokens=24", "-O", "clair.retries=0", "-O", "clair.concurrency=1", "-q"]
    server.faults.append("500")
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2 and "1 of 2 rows unanswered" in res.output and "Traceback" not in res.output
    server.faults.append("500")  # row 1 is cached now; row 0 fails again
    res = CliRunner().invoke(app, [*args, "--judge-allow-unanswered", "1"])
    assert res.exit_code == 0, res.output
    assert "unans:1" in res.output
