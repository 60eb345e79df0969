"""CLAIR and FLEUR through the HTTP backend against a real loopback server whose answers come
from a tiny random model's forward pass (tests/judges/_server.py), with its faults."""
from __future__ import annotations

import math

import numpy as np
import pytest

import capeval
from capeval.judges.backend import JudgeUnavailable
from capeval.judges.metric import TooManyUnanswered

CANDS = ["a dog runs on the grass", "two cats sleep", "a red bus {on} the street"]
REFS = [["a dog running", "a brown dog on grass"], ["cats sleeping on a bed"], ["a bus in a city street"]]


def _opts(server, tmp_path, **kw):
    o = {"url": server.url, "model": "tiny-judge", "cache": str(tmp_path / "cache"), "backoff": 0.01,
         "retries": 2, "timeout": 5.0}
    o.update(kw)
    return o


def _local_clair(local_backend, tmp_path):
    return capeval.score(CANDS, REFS, ["clair"], options={"clair": {
        "model": str(local_backend.folder), "cache": False}})


def test_clair_over_http_is_the_models_answer_and_a_rerun_sends_nothing(server, local_backend, tmp_path):
    r = capeval.score(CANDS, REFS, ["clair"], options={"clair": _opts(server, tmp_path)})
    assert server.requests == len(CANDS)
    v = r.per_caption["clair"]
    assert np.all((v >= 0) & (v <= 1))
    # the endpoint served the same model under the same decoding: the same answers as locally
    local = _local_clair(local_backend, tmp_path)
    assert v.tolist() == local.per_caption["clair"].tolist()
    exp = r.explanations["clair"]
    assert [e.answer for e in exp] == [e.answer for e in local.explanations["clair"]]
    assert all(e.failure is None and isinstance(e.reason, str) for e in exp)
    sig = r.signatures["clair"]
    for field in ("backend:http", "judge:tiny-judge", "prompt:", "t:0.0", "seed:0", "unans:0"):
        assert field in sig
    assert r.details["clair"]["requests"] == len(CANDS)
    assert r.details["clair"]["prompt_tokens"] > 0
    # the server was asked for the JSON form at temperature 0 with the seed
    assert all(b["temperature"] == 0 and b["seed"] == 0 and b["response_format"] == {"type": "json_object"}
               for b in server.bodies)
    again = capeval.score(CANDS, REFS, ["clair"], options={"clair": _opts(server, tmp_path)})
    assert server.requests == len(CANDS)  # all from the cache
    assert again.per_caption["clair"].tolist() == v.tolist()
    assert again.details["clair"]["requests"] == 0


def test_the_api_key_is_sent_and_never_stored(server, tmp_path, monkeypatch):
    secret = "sk-test-secret-123456"
    monkeypatch.setenv("MY_JUDGE_KEY", secret)
    r = capeval.score(CANDS[:1], REFS[:1], ["clair"], options={"clair": _opts(server, tmp_path,
                                                                             api_key_env="MY_JUDGE_KEY")})
    assert server.headers[-1]["Authorization"] == f"Bearer {secret}"
    assert secret not in r.signatures["clair"] and "MY_JUDGE_KEY" not in r.signatures["clair"]
    stored = b"".join(p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert stored and secret.encode() not in stored


@pytest.mark.parametrize("fault, sends", [
    ("429", 2), ("500", 2), ("truncated", 2), ("empty", 2), ("close", 2), ("range", 2)])
def test_a_fault_then_an_answer_is_the_answer(server, tmp_path, fault, sends):
    clean = capeval.score(CANDS[:1], REFS[:1], ["clair"], options={"clair": _opts(server, tmp_path, cache=False)})
    server.requests = 0
    server.faults.append(fault)
    r = capeval.score(CANDS[:1], REFS[:1], ["clair"], options={"clair": _opts(server, tmp_path, cache=False)})
    assert server.requests == sends
    assert r.per_caption["clair"].tolist() == clean.per_caption["clair"].tolist()
    assert r.details["clair"]["unanswered"] == 0


@pytest.mark.parametrize("fault, reason", [
    ("500", "HTTP 500 (after 3 attempts)"), ("429", "HTTP 429 (after 3 attempts)"),
    ("timeout", "no answer within 1.5 s (after 3 attempts)"),
    ("truncated", "invalid JSON"), ("close", "connection closed mid-response"), ("empty", "empty answer"),
    ("range", "unreadable answer: score 150 is outside 0..100")])
def test_a_fault_that_persists_is_an_unanswered_row_not_a_score(server, tmp_path, fault, reason):
    server.delay = 2.5
    # every attempt of row 0 (3 in all), none of row 1: the backend retries a row before the next one;
    # an unreadable answer is asked again in rounds over both rows (row 1's first two answers fail too)
    faults = [fault] * (5 if fault == "range" else 3)
    server.faults.extend(faults)
    opts = _opts(server, tmp_path, timeout=1.5, concurrency=1, max_tokens=24)
    with pytest.raises(TooManyUnanswered, match="1 of 2 rows unanswered") as e:
        capeval.score(CANDS[:2], REFS[:2], ["clair"], options={"clair": opts})
    assert "row 0" in str(e.value) and reason.split(" (")[0] in str(e.value)
    server.faults.clear()
    server.faults.extend(faults)
    r = capeval.score(CANDS[:2], REFS[:2], ["clair"], options={"clair": dict(opts, allow_unanswered=1)})
    v = r.per_caption["clair"]
    assert math.isnan(v[0]) and not math.isnan(v[1])
    assert r.corpus["clair"] == v[1]  # the mean of the answered rows
    assert "unans:1" in r.signatures["clair"] and "allow:1" in r.signatures["clair"]
    assert reason in r.details["clair"]["failures"][0]
    assert r.explanations["clair"][0].failure == r.details["clair"]["failures"][0]


def _image(tmp_path):
    from PIL import Image

    paths = []
    for k, color in enumerate(["red", "blue"]):
        p = tmp_path / f"img{k}.png"
        Image.new("RGB", (8, 8), color).save(p)
        paths.append(str(p))
    return paths


def test_fleur_over_http_smooths_the_endpoints_logprobs(server, tmp_path):
    images = _image(tmp_path)
    r = capeval.score(CANDS[:2], REFS[:2], ["fleur", "reffleur"], images=images,
                      options={f: _opts(server, tmp_path) for f in ("fleur", "reffleur")})
    for fam in ("fleur", "reffleur"):
        v = r.per_caption[fam]
        assert np.all((v >= 0) & (v <= 1)), v
        assert "smooth:ev-digits" in r.signatures[fam]
    body = server.bodies[0]
    assert body["logprobs"] is True and body["top_logprobs"] == 20 and body["guided_regex"]
    assert body["messages"][0]["content"][0]["type"] == "image_url"


def test_fleur_refuses_an_endpoint_without_logprobs_by_name(server, tmp_path):
    server.faults.extend(["nologprobs"] * 4)
    with pytest.raises(JudgeUnavailable, match="'tiny-judge' returned no log probabilities"):
        capeval.score(CANDS[:1], REFS[:1], ["fleur"], images=_image(tmp_path)[:1],
                      options={"fleur": _opts(server, tmp_path, cache=False)})
