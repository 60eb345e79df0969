"""Reading judges' answers: CLAIR's JSON and FLEUR's number with its score smoothing.

An answer that cannot be read raises :class:`Malformed` with the reason; the runner asks again
and, when every attempt fails, leaves the row unanswered (NaN) with that reason. Unlike the
published CLAIR script, no answer is turned into a score by guessing (its fallback takes the
first number anywhere in the text, multiplies numbers below 1 by 100, and scores 0 after three
failures); an answer outside the published range is a failure, not a clipped score.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

from .backend import TokenLogprob


class Malformed(ValueError):
    """An answer that is not in the form the prompt asks for (the message says how)."""


_SCORE_FIELD = re.compile(r'"?score"?\s*[:=]\s*"?(-?\d+(?:\.\d+)?)', re.IGNORECASE)
_REASON_FIELD = re.compile(r'"?reason"?\s*[:=]\s*"((?:[^"\\]|\\.)*)"?', re.IGNORECASE | re.DOTALL)


def first_json_object(text: str) -> dict | None:
    """The first ``{...}`` of ``text`` that parses as a JSON object (code fences and prose around
    it are ignored)."""
    dec = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = dec.raw_decode(text, m.start())
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(obj, dict):
            return obj
    return None


def parse_clair(text: str) -> tuple[float, str]:
    """CLAIR's score on [0, 1] (the answer's 0--100 divided by 100, as published) and reason."""
    if not text or not text.strip():
        raise Malformed("empty answer")
    obj = first_json_object(text)
    if obj is not None and "score" in obj:
        raw, reason = obj["score"], obj.get("reason")
    else:
        m = _SCORE_FIELD.search(text)
        if m is None:
            raise Malformed("no JSON object with a \"score\" in the answer")
        raw = m.group(1)
        r = _REASON_FIELD.search(text)
        reason = r.group(1) if r else None
    if isinstance(raw, bool):
        raise Malformed(f"score {raw!r} is not a number")
    try:
        score = float(raw)
    except (TypeError, ValueError, OverflowError):
        raise Malformed(f"score {str(raw)[:40]!r} is not a number") from None
    if not math.isfinite(score) or not 0.0 <= score <= 100.0:
        raise Malformed(f"score {score:g} is outside 0..100")
    return score / 100.0, reason if isinstance(reason, str) else ""


def fleur_number(text: str) -> tuple[float, str]:
    """FLEUR's reading of an answer: every character but digits and dots dropped, leading and
    trailing dots stripped, the rest read as a number on [0, 1]. Returns the number and the
    digit string it came from."""
    if not text or not text.strip():
        raise Malformed("empty answer")
    digits = re.sub(r"[^0-9.]", "", text).strip(".")
    try:
        value = float(digits)
    except ValueError:
        raise Malformed(f"no single number in the answer ({text.strip()[:40]!r})") from None
    if not 0.0 <= value <= 1.0:
        raise Malformed(f"score {value:g} is outside 0.0..1.0")
    return value, digits


def _digit_offsets(text: str) -> list[int]:
    """Offsets in ``text`` of the characters FLEUR keeps (digits and dots), without the dots it
    strips at either end."""
    keep = [i for i, c in enumerate(text) if c in "0123456789."]
    while keep and text[keep[0]] == ".":
        keep.pop(0)
    while keep and text[keep[-1]] == ".":
        keep.pop()
    return keep


def _token_at(tokens: Sequence[TokenLogprob], offset: int) -> int:
    pos = 0
    for k, t in enumerate(tokens):
        pos += len(t.token)
        if offset < pos:
            return k
    raise Malformed("the answer's log probabilities do not cover its text")


def digit_probs(tok: TokenLogprob) -> list[float]:
    """p(0)..p(9) at one answer position: the alternatives spelled like the chosen digit token
    (its white space kept). A digit missing from the alternatives counts as probability 0."""
    lead = tok.token[: len(tok.token) - len(tok.token.lstrip())]
    return [math.exp(tok.top[f"{lead}{r}"]) if f"{lead}{r}" in tok.top else 0.0 for r in range(10)]


def fleur_smooth(text: str, tokens: Sequence[TokenLogprob]) -> tuple[float, float]:
    """FLEUR's smoothed score and the number the answer wrote (Lee et al., ACL 2024, eq. 2).

    Below 1: sum_r r/10 p1(r), plus sum_r r/100 p2(r) when the number written has a second
    decimal, where p1, p2 are the digit probabilities at the first and second decimal digits.
    For 1.0: 0.9 p(0) + p(1) at the leading digit. ``tokens`` are the answer's tokens with their
    alternatives; each digit used must be a token of its own (tokenizers that merge digits,
    such as OpenAI's, cannot be smoothed this way and give a failure saying so)."""
    value, digits = fleur_number(text)
    if "".join(t.token for t in tokens) != text:
        raise Malformed("the answer's log probabilities do not spell its text")
    offsets = _digit_offsets(text)
    written = "".join(text[i] for i in offsets)
    if written != digits:  # cannot happen: both drop the same characters
        raise Malformed("the answer's digits could not be located")

    def probs_at(char_index: int) -> list[float]:
        k = _token_at(tokens, offsets[char_index])
        if not tokens[k].token.strip().isdigit() or len(tokens[k].token.strip()) != 1:
            raise Malformed(f"the digit is inside the token {tokens[k].token!r}; FLEUR's smoothing needs one token "
                            "per digit")
        return digit_probs(tokens[k])

    if value >= 1.0:
        p = probs_at(0)
        return 0.9 * p[0] + p[1], value
    shown = str(value)  # FLEUR reads the decimals off the float's repr: 0.70 has one, 0.75 two
    dot = digits.find(".")
    if dot < 0:  # "0": no decimal written
        raise Malformed(f"score {digits!r} has no decimal digit to smooth")
    p1 = probs_at(dot + 1)
    score = sum(r * 0.1 * p1[r] for r in range(10))
    if len(shown) > 3:
        p2 = probs_at(dot + 2)
        score += sum(r * 0.01 * p2[r] for r in range(10))
    return score, value
