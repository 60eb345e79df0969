"""Reading answers: CLAIR's JSON (and what is refused), FLEUR's number and its smoothing on
fixed log probabilities, each branch against the formula of the published script."""
from __future__ import annotations

import math

import pytest

from capeval.judges import prompts
from capeval.judges.answers import Malformed, fleur_number, fleur_smooth, parse_clair
from capeval.judges.backend import TokenLogprob


@pytest.mark.parametrize("text, score, reason", [
    ('{"score": 85, "reason": "same dog"}', 0.85, "same dog"),
    ('Sure!\n```json\n{"reason": "close", "score": 40.5}\n```', 0.405, "close"),
    ('{"score": "70", "reason": "x"}', 0.70, "x"),
    ('{"score": 100}', 1.0, ""),
    ('score: 12, reason: "truncated', 0.12, "truncated"),
    ('{"score": 0, "reason": "a {braced} caption"}', 0.0, "a {braced} caption"),
])
def test_clair_answers_read(text, score, reason):
    assert parse_clair(text) == (pytest.approx(score), reason)


@pytest.mark.parametrize("text, why", [
    ("", "empty answer"), ("   ", "empty answer"),
    ('{"score": 150, "reason": "x"}', "outside 0..100"), ('{"score": -3}', "outside 0..100"),
    ('{"score": true}', "not a number"), ('{"score": "high"}', "not a number"),
    ("I think they match, maybe 7 of 10", "no JSON object"), ('{"score": NaN}', "outside"),
])
def test_clair_answers_refused_never_guessed(text, why):
    with pytest.raises(Malformed, match=why):
        parse_clair(text)


def _tokens(text, probs_at):
    """One token per character; ``probs_at[k]`` gives p(0..9) at character k."""
    out = []
    for k, ch in enumerate(text):
        p = probs_at.get(k)
        top = {} if p is None else {str(r): math.log(v) for r, v in enumerate(p) if v > 0}
        out.append(TokenLogprob(ch, top.get(ch, -1.0), top))
    return out


P1 = [0.05, 0.0, 0.1, 0.0, 0.0, 0.0, 0.2, 0.4, 0.05, 0.1]
P2 = [0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.3]


def test_fleur_smoothing_one_decimal():
    score, written = fleur_smooth("0.7", _tokens("0.7", {2: P1}))
    assert written == 0.7
    assert score == pytest.approx(sum(r * 0.1 * P1[r] for r in range(10)), abs=1e-12)


def test_fleur_smoothing_two_decimals_reads_both_digits():
    score, _ = fleur_smooth("0.75", _tokens("0.75", {2: P1, 3: P2}))
    want = sum(r * 0.1 * P1[r] for r in range(10)) + sum(r * 0.01 * P2[r] for r in range(10))
    assert score == pytest.approx(want, abs=1e-12)


def test_fleur_smoothing_of_one_reads_the_leading_digit():
    p = [0.3, 0.6] + [0.0] * 8
    score, written = fleur_smooth("1.0", _tokens("1.0", {0: p}))
    assert written == 1.0 and score == pytest.approx(0.9 * 0.3 + 0.6, abs=1e-12)


def test_fleur_smoothing_keeps_the_digit_tokens_white_space():
    toks = [TokenLogprob("Score:", -0.1), TokenLogprob(" 0", -0.1), TokenLogprob(".", -0.1),
            TokenLogprob("7", -0.2, {str(r): math.log(v) for r, v in enumerate(P1) if v > 0})]
    score, _ = fleur_smooth("Score: 0.7", toks)
    assert score == pytest.approx(sum(r * 0.1 * P1[r] for r in range(10)), abs=1e-12)


@pytest.mark.parametrize("text, why", [
    ("", "empty"), ("1.5", "outside"), ("0.5 or 0.6", "no single number"), ("great", "no single number"),
    ("0", "no decimal digit"),
])
def test_fleur_answers_refused(text, why):
    with pytest.raises(Malformed, match=why):
        fleur_smooth(text, _tokens(text, {}))


def test_fleur_refuses_merged_digit_tokens():
    toks = [TokenLogprob("0", -0.1), TokenLogprob(".", -0.1), TokenLogprob("75", -0.2, {"75": -0.2})]
    with pytest.raises(Malformed, match="one token per digit"):
        fleur_smooth("0.75", toks)


def test_fleur_number_is_read_as_published():
    assert fleur_number("Score: 0.8.")[0] == 0.8
    assert fleur_number(" 1.0 ")[0] == 1.0


def test_prompts_are_the_published_ones():
    # digests of the published wording (CLAIR's clair.py, FLEUR's fleur.py and reffleur.py)
    assert [prompts.digest(t) for t in (prompts.CLAIR_TEMPLATE, prompts.FLEUR_TEMPLATE,
                                        prompts.REFFLEUR_TEMPLATE)] == ["65eab3a76991", "61ae4bbd9c58", "72465779d167"]
    p = prompts.clair_prompt("a {x} dog", ["r1", "r2"])
    assert "Candidate set:\n- a {x} dog\nReference set:\n- r1\n- r2\nOn a precise scale from 0 to 100" in p
    f = prompts.fleur_prompt("a  dog\truns")
    assert f.endswith("Caption: a dog runs\n\nScore(Choose a rating from 0.0 to 1.0):")
    rf = prompts.fleur_prompt("a dog", ["r1", "r2"])
    assert "Reference Captions: r1\nr2\n\nCandidate Caption: a dog\n\n" in rf
    assert rf.startswith("Your task is to evaluate and rate the candidate caption on a scale of 0.0 to 1.0")
