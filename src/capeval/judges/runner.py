"""One judged batch: cached answers read back, the rest asked, unreadable answers asked again,
and every row's verdict (a score and its reason, or a failure and its reason) with its token
counts. A failure is never a score: the row's score is NaN and the failure says why.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .answers import Malformed
from .backend import Decoding, Reply, Request
from .cache import ResponseCache, request_key


@dataclass
class Verdict:
    """One row's outcome. ``written`` is the number the judge wrote where it differs from the
    score (FLEUR's answer before smoothing)."""

    score: float = math.nan
    reason: str = ""
    failure: str | None = None
    written: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    sent: int = 0  # requests this row sent in this run (0: read from the cache)
    answer: str | None = None

    def to_dict(self) -> dict:
        out: dict = {"score": None if math.isnan(self.score) else self.score, "reason": self.reason}
        if self.failure is not None:
            out["failure"] = self.failure
        if self.written is not None:
            out["written"] = self.written
        out["answer"] = self.answer
        return out

    def table(self) -> str:
        if self.failure is not None:
            return f"unanswered: {self.failure}"
        return f"score {self.score:.4f}: {self.reason}"


#: reads a reply into (score, reason, written number or None); raises Malformed
Reader = Callable[[Reply], tuple[float, str, "float | None"]]


def _read(reply: Reply, read: Reader) -> tuple[Verdict | None, str]:
    if reply.failure is not None:
        return None, reply.failure
    try:
        score, reason, written = read(reply)
    except Malformed as e:
        return None, f"unreadable answer: {e}"
    return Verdict(score=score, reason=reason, written=written, prompt_tokens=reply.prompt_tokens,
                   completion_tokens=reply.completion_tokens, answer=reply.text), ""


def judge(backend, requests: Sequence[Request], dec: Decoding, read: Reader, *, attempts: int = 3,
          cache: ResponseCache | None = None) -> list[Verdict]:
    """The verdict of every request, in order. Transport failures (timeouts, 429/5xx, broken
    connections) were retried by the backend; an answer that cannot be read is asked again up
    to ``attempts`` times in all (unless the backend is deterministic, when asking again would
    give the same answer). Only answers read successfully are cached."""
    ident = backend.identity()
    keys = [request_key(ident, r.prompt, r.image_digest, dec.key(), r.shape) for r in requests]
    out: list[Verdict | None] = [None] * len(requests)
    why = [""] * len(requests)
    sent = [0] * len(requests)
    if cache is not None:
        for i, k in enumerate(keys):
            hit = cache.get(k)
            if hit is not None:
                out[i], why[i] = _read(hit, read)
    rounds = 1 if getattr(backend, "deterministic", False) else max(1, attempts)
    for _ in range(rounds):
        todo = [i for i, v in enumerate(out) if v is None and not why[i].startswith("HTTP 4")]
        todo = [i for i in todo if not (sent[i] and not why[i].startswith("unreadable"))]
        if not todo:
            break
        def keep(j: int, reply: Reply, todo: list[int] = todo) -> None:
            # cached as it arrives, not after the batch: a run killed mid-batch asks it no more
            if cache is not None and _read(reply, read)[0] is not None:
                cache.put(keys[todo[j]], reply)

        replies = backend.complete([requests[i] for i in todo], dec, on_reply=keep)
        for i, reply in zip(todo, replies):
            sent[i] += max(1, reply.attempts)
            out[i], why[i] = _read(reply, read)
    verdicts = [v if v is not None else Verdict(failure=why[i] or "no answer") for i, v in enumerate(out)]
    for v, n in zip(verdicts, sent):
        v.sent = n
    return verdicts
