"""Failures are never scores, at the command line: every fault the loopback server can make
(after the retries) ends ``capeval score -m clair`` with exit status 2 and a one-line error naming
the row and the reason (no traceback); with ``--judge-allow-unanswered`` the row is written as
null (NaN) and the signature counts it. Retries: ``Retry-After`` honoured (and capped), backoff
doubling, a refused request (4xx) not retried. The API key is in no output, error or cache key.
Cost counts the tokens of answers sent in the run."""
from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

import capeval
from capeval.cli.main import app

CAND, REFS = "a dog runs on the grass", ["a dog running", "a brown dog"]


def _input(tmp_path, n=1):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"r{k}", "candidate": f"{CAND} {k}", "references": REFS}) + "\n"
                           for k in range(n)))
    return src


def _argv(url, src, *extra):
    return ["score", "-i", str(src), "-m", "clair", "--judge-url", url, "--judge-model", "tiny-judge",
            "-O", "clair.max_tokens=24", "-O", "clair.retries=1", "-O", "clair.backoff=0.01", "-O", "clair.timeout=1",
            "-O", "clair.concurrency=1", "-q", *extra]


FAULTS = [  # (fault, the reason the error gives, requests sent: retries=1 doubles a transport fault,
    # attempts=3 asks an unreadable answer three times; a refusal or an oversized body is not asked again)
    ("500", "HTTP 500 (after 2 attempts)", 2), ("429", "HTTP 429 (after 2 attempts)", 2),
    ("400", "HTTP 400 (not retried", 1), ("timeout", "no answer within 1 s", 2),
    ("truncated", "invalid JSON", 2), ("close", "connection closed mid-response", 2), ("empty", "empty answer", 2),
    ("range", "score 150 is outside 0..100", 3), ("markup", "score '[bold red]boom[/]' is not a number", 3),
    ("drip", "no answer within 1 s", 2), ("endless", "response over 16 MiB", 1), ("huge", "response over 16 MiB", 1), ("deep", "nested deeper than", 2),
    ("notutf8", "response is not UTF-8", 2), ("refused", "connection failed (ConnectionRefusedError)", 0),
]


def _closed_port() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


@pytest.mark.parametrize("fault, reason, sends", FAULTS, ids=[f[0] for f in FAULTS])
def test_a_fault_exits_2_naming_the_row_or_is_a_counted_nan_when_allowed(server, tmp_path, monkeypatch, fault,
                                                                          reason, sends):
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    server.delay = 2.0
    url = _closed_port() if fault == "refused" else server.url
    src, out = _input(tmp_path), tmp_path / "out.jsonl"
    server.faults.extend([fault] * 6)  # every attempt of the row
    res = CliRunner().invoke(app, _argv(url, src, "-o", str(out)))
    flat = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and isinstance(res.exception, SystemExit)
    assert "1 of 1 rows unanswered" in flat and "row 0" in flat and reason in flat, flat
    assert not out.exists()  # nothing is written from a failed run
    assert server.requests == sends

    server.faults.clear()
    server.faults.extend([fault] * 6)
    res = CliRunner().invoke(app, _argv(url, src, "-o", str(out), "--judge-allow-unanswered", "1"))
    assert res.exit_code == 0, res.output
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["clair"] is None  # NaN, never a number
    sig = json.loads((tmp_path / "out.signatures.json").read_text())["signatures"]["clair"]
    assert "unans:1" in sig and "allow:1" in sig


def test_retry_after_is_honoured_and_capped(server, tmp_path, monkeypatch):
    opts = {"url": server.url, "model": "tiny-judge", "cache": False, "max_tokens": 24, "backoff": 0.01}
    server.faults.append("429@0.8")
    start = time.monotonic()
    r = capeval.score([CAND], [REFS], ["clair"], options={"clair": opts})
    assert time.monotonic() - start >= 0.8 and server.requests == 2 and r.details["clair"]["unanswered"] == 0
    import capeval.judges.backend as backend

    monkeypatch.setattr(backend, "MAX_RETRY_AFTER", 0.2)
    server.faults.append("429@3600")
    start = time.monotonic()
    r = capeval.score([CAND], [REFS], ["clair"], options={"clair": opts})
    assert time.monotonic() - start < 60 and server.requests == 4 and r.details["clair"]["unanswered"] == 0


def test_backoff_doubles_between_attempts(server, tmp_path):
    opts = {"url": server.url, "model": "tiny-judge", "cache": False, "max_tokens": 24, "backoff": 0.2,
            "retries": 3}
    server.faults.extend(["500"] * 3)
    start = time.monotonic()
    r = capeval.score([CAND], [REFS], ["clair"], options={"clair": opts})
    assert time.monotonic() - start >= 0.2 + 0.4 + 0.8
    assert server.requests == 4 and r.details["clair"]["unanswered"] == 0


def test_the_api_key_is_in_no_output_error_or_cache_key(server, tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    secret = "sk-never-shown-0123456789"
    monkeypatch.setenv("JUDGE_KEY", secret)
    src, out = _input(tmp_path, 2), tmp_path / "out.jsonl"
    argv = _argv(server.url, src, "-O", "clair.api_key_env=JUDGE_KEY", "-o", str(out))
    server.faults.extend(["500"] * 2)  # row 0 fails; row 1 is answered and cached
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 2 and secret not in res.output
    assert all(h.get("Authorization") == f"Bearer {secret}" for h in server.headers)
    res = CliRunner().invoke(app, [*argv, "--judge-allow-unanswered", "1"])
    assert res.exit_code == 0 and secret not in res.output
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert secret.encode() not in written and b"JUDGE_KEY" not in written.replace(b"clair.api_key_env", b"")
    # another key (or none) finds the same cache entries: the key is not part of the cache key
    sent = server.requests
    monkeypatch.setenv("JUDGE_KEY", "sk-another-key")
    res = CliRunner().invoke(app, [*argv, "--overwrite"])
    assert res.exit_code == 0 and server.requests == sent


def test_cost_counts_the_tokens_sent_and_cached_answers_cost_nothing(server, tmp_path):
    opts = {"url": server.url, "model": "tiny-judge", "cache": str(tmp_path / "c"), "max_tokens": 24,
            "price_prompt": 0.15, "price_completion": 0.6, "retries": 1, "backoff": 0.01, "concurrency": 1}
    cands, refs = [CAND, "two cats sleep"], [REFS, ["cats sleeping"]]
    server.faults.append("500")  # a retry: two requests for row 0, its tokens counted once
    d = capeval.score(cands, refs, ["clair"], options={"clair": opts}).details["clair"]
    assert server.requests == 3 and d["requests"] == 3
    assert d["prompt_tokens_sent"] == d["prompt_tokens"] > 0 and d["completion_tokens_sent"] == d["completion_tokens"]
    assert d["cost"] == (d["prompt_tokens"] * 0.15 + d["completion_tokens"] * 0.6) / 1e6
    again = capeval.score(cands, refs, ["clair"], options={"clair": opts}).details["clair"]
    assert again["requests"] == 0 and again["cost"] == 0.0 and again["prompt_tokens"] == d["prompt_tokens"]
