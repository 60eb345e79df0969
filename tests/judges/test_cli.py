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


def test_clair_streams_in_chunks_with_the_in_memory_bytes(tiny_judge, tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    src = _input(tmp_path)
    base = ["score", "-i", str(src), "-m", "clair", "--judge-model", str(tiny_judge), "-O", "clair.max_tokens=24",
            "-O", "clair.cache=false", "-q"]
    mem, streamed = tmp_path / "mem.jsonl", tmp_path / "streamed.jsonl"
    res = CliRunner().invoke(app, [*base, "-o", str(mem)])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, [*base, "-o", str(streamed), "--chunk-size", "1"])
    assert res.exit_code == 0, res.output
    assert streamed.read_bytes() == mem.read_bytes()
    sig = json.loads((tmp_path / "streamed.signatures.json").read_text())
    assert sig == json.loads((tmp_path / "mem.signatures.json").read_text())


def test_a_damaged_cache_entry_is_dropped_and_asked_again(server, tmp_path, monkeypatch):
    import warnings

    import capeval
    from capeval.judges.cache import JudgeCacheDamaged

    opts = {"clair": {"url": server.url, "model": "tiny-judge", "cache": str(tmp_path / "c"), "max_tokens": 24}}
    first = capeval.score(["a dog"], [["a dog running"]], ["clair"], options=opts)
    (entry,) = (tmp_path / "c").rglob("*.json")
    entry.write_bytes(entry.read_bytes().replace(b'"score', b'"sc0re'))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        again = capeval.score(["a dog"], [["a dog running"]], ["clair"], options=opts)
    assert any(issubclass(w.category, JudgeCacheDamaged) for w in seen)
    assert server.requests == 2 and again.per_caption["clair"].tolist() == first.per_caption["clair"].tolist()
