"""The pairwise judge (``pairjudge``) against the loopback server, whose answers come from a tiny
random model's forward pass (tests/judges/_server.py): both orders asked, disagreements counted,
the cache, faults, and the wiring into ``capeval bench``."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

import capeval
from capeval.cli.main import app
from capeval.errors import InputError
from capeval.judges.metric import TooManyUnanswered
from capeval.judges.pairwise import PAIR_TEMPLATE, combine_orders, pair_prompt, parse_pair
from capeval.judges.prompts import digest
from capeval.judges.runner import Verdict

A = ["a dog runs on the grass", "two cats sleep", "a red bus {on} the street"]
B = ["a cat sits on a car", "two dogs asleep on a bed", "a bus"]
REFS = [["a dog running", "a brown dog on grass"], ["cats sleeping on a bed"], ["a bus in a city street"]]


def _opts(server, tmp_path, **kw):
    o = {"url": server.url, "model": "tiny-judge", "cache": str(tmp_path / "cache"), "backoff": 0.01,
         "retries": 2, "timeout": 5.0, "max_tokens": 24}
    o.update(kw)
    return o


def _score(opts, n=len(A)):
    return capeval.score(A[:n] + B[:n], REFS[:n] + REFS[:n], ["pairjudge"], options={"pairjudge": opts})


def _user_text(body) -> str:
    return body["messages"][-1]["content"]


def test_both_orders_are_asked_and_a_rerun_sends_nothing(server, local_backend, tmp_path):
    r = _score(_opts(server, tmp_path))
    n = len(A)
    assert server.requests == 2 * n
    prompts = [_user_text(b) for b in server.bodies]
    for a, b, refs in zip(A, B, REFS):
        assert pair_prompt(a, b, refs) in prompts and pair_prompt(b, a, refs) in prompts
    assert all(b["response_format"] == {"type": "json_object"} and b["guided_json"]["required"] == ["better", "reason"]
               and b["temperature"] == 0 for b in server.bodies)
    v = r.per_caption["pairjudge"]
    assert set(v.tolist()) <= {0.0, 0.5, 1.0} and np.all(v[:n] + v[n:] == 1.0)
    d = r.details["pairjudge"]
    assert d["requests"] == 2 * n and d["pairs"] == n and d["unanswered"] == 0
    ties = int(np.sum(v[:n] == 0.5))
    assert d["disagree"] == ties and d["disagree_rate"] == ties / n
    sig = r.signatures["pairjudge"]
    for field in ("backend:http", "judge:tiny-judge", f"prompt:{digest(PAIR_TEMPLATE)}", "orders:both",
                  f"disagree:{ties}/{n}|", "unans:0", "image:no"):
        assert field in sig, (field, sig)
    # the endpoint served the same model under the same decoding: the answers given locally
    local = _score({"model": str(local_backend.folder), "cache": False, "max_tokens": 24})
    assert local.per_caption["pairjudge"].tolist() == v.tolist()
    assert [e.answers for e in local.explanations["pairjudge"]] == [e.answers for e in r.explanations["pairjudge"]]
    again = _score(_opts(server, tmp_path))
    assert server.requests == 2 * n  # every answer from the cache
    assert again.per_caption["pairjudge"].tolist() == v.tolist() and again.details["pairjudge"]["requests"] == 0


def test_a_position_biased_judge_disagrees_with_itself_on_every_pair(server, tmp_path):
    server.pick_first = True
    r = _score(_opts(server, tmp_path, cache=False))
    n = len(A)
    assert server.requests == 2 * n
    d = r.details["pairjudge"]
    assert d["disagree"] == n and d["disagree_rate"] == 1.0 and d["first_position_picked"] == 2 * n
    assert r.per_caption["pairjudge"].tolist() == [0.5] * (2 * n)
    assert f"orders:both|disagree:{n}/{n}|" in r.signatures["pairjudge"]
    assert all(e.preferred == "tie" and e.picks == ("a", "b") for e in r.explanations["pairjudge"])


def test_two_orders_that_agree_give_that_caption():
    first_won, first_lost = Verdict(score=1.0), Verdict(score=0.0)
    assert combine_orders(first_won, first_lost)[0] == "a"  # (a,b) -> a; (b,a) -> a
    assert combine_orders(first_lost, first_won)[0] == "b"
    assert combine_orders(first_won, first_won)[0] == "tie"
    pref, picks, why = combine_orders(first_won, Verdict(failure="HTTP 500"))
    assert pref is None and picks == ("a", None) and why == "order (b,a): HTTP 500"


@pytest.mark.parametrize("text, pick", [
    ('{"better": "A", "reason": "r"}', "A"), ('```json\n{"better": "caption b"}\n```', "B"),
    ('{"better": " b ", "reason": 3}', "B")])
def test_answers_naming_a_caption_are_read(text, pick):
    assert parse_pair(text)[0] == pick


@pytest.mark.parametrize("text", ["", "A", '{"better": "C"}', '{"better": 1}', '{"score": 50}', '{"better": "A"'])
def test_other_answers_are_malformed(text):
    from capeval.judges.answers import Malformed

    with pytest.raises(Malformed):
        parse_pair(text)


@pytest.mark.parametrize("fault, count, reason", [
    ("500", 3, "order (a,b): HTTP 500 (after 3 attempts)"), ("timeout", 3, "no answer within 1.5 s"),
    ("truncated", 3, "invalid JSON"), ("close", 3, "connection closed mid-response"),
    ("empty", 3, "order (a,b): empty answer (after 3 attempts)"),
    ("range", 1, "order (a,b): unreadable answer: no JSON object with a \"better\"")])
def test_a_pair_left_unanswered_fails_the_run_unless_allowed(server, tmp_path, fault, count, reason):
    server.delay = 2.5
    # one request at a time, in the order (a,b) of every pair then (b,a): the faults hit pair 0's (a,b)
    opts = _opts(server, tmp_path, timeout=1.5, concurrency=1, attempts=1, cache=False)
    server.faults.extend([fault] * count)
    with pytest.raises(TooManyUnanswered, match="1 of 2 pairs unanswered") as e:
        _score(opts, n=2)
    assert "pair 0" in str(e.value) and reason.split(" (after")[0] in str(e.value)
    server.faults.extend([fault] * count)
    r = _score(dict(opts, allow_unanswered=1), n=2)
    v = r.per_caption["pairjudge"]
    assert math.isnan(v[0]) and math.isnan(v[2]) and not math.isnan(v[1]) and not math.isnan(v[3])
    assert r.corpus["pairjudge"] == v[1]
    sig = r.signatures["pairjudge"]
    assert "unans:1" in sig and "allow:1" in sig
    assert f"disagree:{r.details['pairjudge']['disagree']}/1|" in sig  # over the one answered pair
    assert reason in r.details["pairjudge"]["failures"][0]
    assert r.explanations["pairjudge"][0].failure == r.details["pairjudge"]["failures"][0]


def test_a_corpus_that_is_not_pairs_is_refused():
    with pytest.raises(InputError, match="pairjudge judges pairs"):
        capeval.score(["a", "b", "c"], [["x"], ["y"], ["z"]], ["pairjudge"], options={"pairjudge": {"model": "m",
                                                                                                    "url": "http://x/v1"}})
    with pytest.raises(InputError, match="pairjudge judges pairs"):
        capeval.score(["a", "b"], [["x"], ["y"]], ["pairjudge"], options={"pairjudge": {"model": "m", "url": "http://x/v1"}})


def _pairs_file(tmp_path):
    src = tmp_path / "pairs.jsonl"
    rows = [{"a": a, "b": b, "references": refs, "preferred": p} for a, b, refs, p in zip(A, B, REFS, "aba")]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return src


def _bench(server, tmp_path, *extra):
    args = ["bench", "--file", str(_pairs_file(tmp_path)), "-m", "pairjudge", "--judge-url", server.url,
            "--judge-model", "tiny-judge", "-O", "pairjudge.max_tokens=24", "--cache-dir", str(tmp_path / "scores"),
            *extra]
    return CliRunner().invoke(app, args)


def test_bench_on_a_pairwise_file_then_from_the_judge_cache(server, tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    server.pick_first = True
    out = tmp_path / "out.json"
    res = _bench(server, tmp_path, "--json", str(out))
    assert res.exit_code == 0, res.output
    assert server.requests == 6
    assert "orders:both|disagree:3/3|" in res.output  # the table's notes carry the signature
    first = json.loads(out.read_text())
    assert "orders:both|disagree:3/3|" in json.dumps(first)
    # the score cache off: the judge is asked again, and every answer comes from its response cache
    res = _bench(server, tmp_path, "--no-cache", "--json", str(out), "--overwrite")
    assert res.exit_code == 0, res.output
    assert server.requests == 6
    again = json.loads(out.read_text())
    assert {k: v for k, v in again.items() if k != "_meta"} == {k: v for k, v in first.items() if k != "_meta"}
    assert first["pairjudge"]["mean"] == 50.0  # every pair a tie, half credit each


def test_bench_exits_2_on_an_unanswered_pair_unless_allowed(server, tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    faults = ["-O", "pairjudge.retries=0", "-O", "pairjudge.concurrency=1", "-O", "pairjudge.attempts=1", "-q"]
    server.faults.append("500")
    res = _bench(server, tmp_path, *faults)
    assert res.exit_code == 2 and "1 of 3 pairs unanswered" in res.output and "Traceback" not in res.output
    server.faults.append("500")  # the other pairs' answers are cached; pair 0 fails again
    out = tmp_path / "out.json"
    res = _bench(server, tmp_path, *faults, "--judge-allow-unanswered", "1", "--json", str(out))
    assert res.exit_code == 0, res.output
    sig = json.dumps(json.loads(out.read_text()))
    assert "unans:1" in sig and "defined:2/3" in sig


def test_pairjudge_is_refused_by_name_off_pairwise_tables(tmp_path):
    ratings = tmp_path / "ratings.jsonl"
    ratings.write_text(json.dumps({"candidate": "a dog", "references": ["a dog"], "human": 3}) + "\n"
                       + json.dumps({"candidate": "a cat", "references": ["a dog"], "human": 1}) + "\n")
    res = CliRunner().invoke(app, ["bench", "--file", str(ratings), "-m", "pairjudge", "--judge-url",
                                   "http://127.0.0.1:9/v1", "--judge-model", "m", "-q"])
    assert res.exit_code == 2 and "pairjudge judge(s) pairs of captions" in res.output and "ratings" in res.output
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"candidate": "a dog", "references": ["a dog"]}) + "\n")
    res = CliRunner().invoke(app, ["score", "-i", str(src), "-m", "pairjudge", "--judge-url", "http://127.0.0.1:9/v1",
                                   "--judge-model", "m", "-q"])
    assert res.exit_code == 2 and "pairjudge judge(s) pairs of captions" in res.output and "Traceback" not in res.output


def test_each_pairs_image_goes_with_both_orders(server, tiny_llava, images, tmp_path):
    paths = images[:2] + images[:2]  # pair i's image beside both of its members
    r = capeval.score(A[:2] + B[:2], REFS[:2] + REFS[:2], ["pairjudge"], images=paths,
                      options={"pairjudge": _opts(server, tmp_path, cache=False)})
    assert server.requests == 4 and "image:yes" in r.signatures["pairjudge"]
    # requests arrive in any order (four in flight): each image is found by its prompt
    sent = {next(p["text"] for p in _user_text(b) if p["type"] == "text"):
            next(p["image_url"]["url"] for p in _user_text(b) if p["type"] == "image_url") for b in server.bodies}
    ab = [sent[pair_prompt(A[i], B[i], REFS[i])] for i in range(2)]
    ba = [sent[pair_prompt(B[i], A[i], REFS[i])] for i in range(2)]
    assert ab == ba and ab[0] != ab[1]
    # a LLaVA-style model directory judges the pair with its image, under the same answer form
    local = capeval.score(A[:2] + B[:2], REFS[:2] + REFS[:2], ["pairjudge"], images=paths,
                          options={"pairjudge": {"model": str(tiny_llava), "cache": False, "max_tokens": 24}})
    assert all(json.loads(e.answers[0])["better"] in ("A", "B") for e in local.explanations["pairjudge"])
    assert local.details["pairjudge"]["unanswered"] == 0


def test_members_of_a_pair_with_different_images_are_refused(images):
    with pytest.raises(InputError, match="pairjudge judges pairs"):
        capeval.score(A[:1] + B[:1], REFS[:1] * 2, ["pairjudge"], images=images[:2],
                      options={"pairjudge": {"model": "m", "url": "http://x/v1"}})


def test_the_stress_suite_refuses_a_pairwise_judge_by_name():
    from capeval.errors import InputError
    from capeval.stress import stress

    with pytest.raises(InputError, match="pairjudge judge.s. pairs of captions, while the stress suite"):
        stress(items=[{"candidate": "a dog runs", "references": ["a dog runs ."]}], metrics=["pairjudge"],
               options={"pairjudge": {"url": "http://127.0.0.1:9/v1", "model": "x"}}, n_resamples=10)
