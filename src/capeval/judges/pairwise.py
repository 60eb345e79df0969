"""Pairwise judging: the ``pairjudge`` family (docs/JUDGES.md, *Pairwise judging*).

The judge sees both captions of a pair (with the references, and the image when the call has
one) and names the better one in JSON (``{"better": "A" or "B", "reason": "..."}``). Every pair
is asked in both orders, (a, b) and (b, a), so a judge that favours a position cannot favour a
caption: when the two orders agree the pair's preference is that caption; when they disagree
the preference is a tie, scored 0.5 for both members, which the pairwise accuracy then treats
as any metric tie (``tie_policy``: half credit by default). How many pairs the two orders
disagree on is reported (signature ``orders:both|disagree:N/M``, N of the M answered pairs;
count and rate in the details).

The family's corpus is a pairwise benchmark's unit list (:func:`capeval.stats.experiments.
pairwise_units`): the A member of every pair, then the B members in the same order, each with
its pair's references (and image). Unit ``i`` and ``n + i`` form pair ``i``; a corpus that is
not laid out so is refused. A member's score is 1 when the judge prefers it, 0 when it prefers
the other, 0.5 on a disagreement; the corpus value is the share of pairs won by their A member
(ties counting half). A pair is answered only when both orders are: otherwise both members are
NaN, the reason is kept per pair, and the run fails unless ``allow_unanswered`` covers it (a
benchmark then leaves the pair out of the accuracy, counted in the signature).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..metrics.base import OutputInfo
from ..metrics.registry import register
from ..metrics.statistics import Statistics
from .answers import Malformed, first_json_object
from .backend import Reply, Request
from .metric import JudgeAggregate, JudgeMetric, check_unanswered, judge_image
from .runner import Verdict

PAIR_TEMPLATE = (
    "Two candidate captions were written for the same image. Captions that people wrote for that image are "
    "given as references.\n"
    "Reference captions:\n{references}"
    "Caption A: {first}\n"
    "Caption B: {second}\n"
    "Which candidate caption describes the image better? Judge each one against the references: is what it "
    "says correct, does it mention what matters, and is it fluent? Answer in JSON format, with a key "
    "\"better\" whose value is \"A\" or \"B\", and a key \"reason\" with a short string value explaining "
    "the choice.\n"
)
_UNANSWERED = ("the judge gave no usable answer to one or both orders of the pair after its retries "
               "(the reason is in Result.details['pairjudge']['failures'])")


def pair_prompt(first: str, second: str, references: Sequence[str]) -> str:
    # Braces in captions are text: substitution is by position, never str.format on user text.
    head, rest = PAIR_TEMPLATE.split("{references}")
    mid, rest = rest.split("{first}")
    mid2, tail = rest.split("{second}")
    return head + "".join(f"- {r}\n" for r in references) + mid + first + mid2 + second + tail


def parse_pair(text: str) -> tuple[str, str]:
    """The caption the answer names (``"A"`` or ``"B"``) and its reason. Only a JSON object with
    ``better`` set to A or B (any case, ``Caption A`` too) is read; anything else is Malformed."""
    if not text or not text.strip():
        raise Malformed("empty answer")
    obj = first_json_object(text)
    if obj is None or "better" not in obj:
        raise Malformed("no JSON object with a \"better\" in the answer")
    raw = obj["better"]
    pick = raw.strip().upper().removeprefix("CAPTION").strip() if isinstance(raw, str) else None
    if pick not in ("A", "B"):
        raise Malformed(f"\"better\" is {str(raw)[:40]!r}, not \"A\" or \"B\"")
    reason = obj.get("reason")
    return pick, reason if isinstance(reason, str) else ""


@dataclass
class PairVerdict:
    """One member's explanation: its pair's outcome. ``preferred`` is ``"a"``, ``"b"``, ``"tie"``
    (the two orders disagree) or None (unanswered); ``picks`` the caption each order named
    (order (a, b) first), ``reasons`` and ``answers`` the judge's words in that order."""

    pair: int
    side: str
    preferred: str | None
    picks: tuple[str | None, str | None]
    reasons: tuple[str, str]
    answers: tuple[str | None, str | None]
    failure: str | None = None

    @property
    def score(self) -> float:
        if self.preferred is None:
            return math.nan
        return 0.5 if self.preferred == "tie" else float(self.preferred == self.side)

    def to_dict(self) -> dict:
        out: dict = {"pair": self.pair, "side": self.side, "score": None if self.preferred is None else self.score,
                     "preferred": self.preferred, "picks": list(self.picks), "reasons": list(self.reasons),
                     "answers": list(self.answers)}
        if self.failure is not None:
            out["failure"] = self.failure
        return out

    def table(self) -> str:
        if self.failure is not None:
            return f"pair {self.pair} unanswered: {self.failure}"
        if self.preferred == "tie":
            return f"pair {self.pair}: the orders disagree (a,b) -> {self.picks[0]}, (b,a) -> {self.picks[1]}: tie"
        return f"pair {self.pair}: prefers {self.preferred}: {self.reasons[0]}"


def combine_orders(ab: Verdict, ba: Verdict) -> tuple[str | None, tuple, str | None]:
    """Pair ``i``'s preference from its two orders' verdicts (score 1: the first shown won)."""
    picks = (None if ab.failure else ("a" if ab.score == 1.0 else "b"),
             None if ba.failure else ("b" if ba.score == 1.0 else "a"))
    if ab.failure or ba.failure:
        why = "; ".join(f"order {o}: {v.failure}" for o, v in (("(a,b)", ab), ("(b,a)", ba)) if v.failure)
        return None, picks, why
    return (picks[0] if picks[0] == picks[1] else "tie"), picks, None


class PairAggregate(JudgeAggregate):
    """Rows are the units (A members, then B members). Corpus: the share of answered pairs won
    by their A member; ``unans`` and the failures count pairs; ``disagree`` the answered pairs
    whose two orders named different captions."""

    def _pairs(self, st: Statistics) -> int:
        return st.n // 2

    def _check(self, st: Statistics) -> None:
        n = self._pairs(st)
        check_unanswered(self.output, st.rows["failed"][:n], st.rows["failure"], self.allow, of=f"{n} pairs",
                         then="(--judge-allow-unanswered) to leave those pairs out, counted")

    def corpus(self, st: Statistics) -> dict[str, float]:
        self._check(st)
        a = st.rows[self.output][: self._pairs(st)]
        ok = a[~np.isnan(a)]
        return {self.output: float(np.mean(ok)) if ok.size else math.nan}

    def fields(self, st: Statistics) -> dict[str, Any]:
        n = self._pairs(st)
        unans = int(st.rows["failed"][:n].sum()) if st.n else 0
        # disagreeing / answered pairs: the count and, with it, the rate in every table and report
        disagree = int(st.rows["disagree"].sum()) if st.n else 0
        return {"orders": "both", "disagree": f"{disagree}/{n - unans}", "unans": unans}

    def details(self, st: Statistics) -> dict[str, Any]:
        out = super().details(st)
        if not st.n:
            return out
        n = self._pairs(st)
        unanswered = int(st.rows["failed"][:n].sum())
        disagree = int(st.rows["disagree"].sum())
        out.update(pairs=n, unanswered=unanswered, disagree=disagree,
                   disagree_rate=disagree / (n - unanswered) if n > unanswered else None,
                   first_position_picked=int(st.rows["first_picked"].sum()),
                   failures={int(i): str(st.rows["failure"][i]) for i in np.flatnonzero(st.rows["failed"][:n])})
        return out


@register
class PairJudge(JudgeMetric):
    """A judge that sees both captions of a pair and names the better one, asked in both orders."""

    family = "pairjudge"
    variant = "pairjudge"
    shape = "pair_json"
    template = PAIR_TEMPLATE
    accepts_images = True
    streamable = False
    pairwise = True
    outputs = (OutputInfo("pairjudge", "pairjudge", "pairjudge", (0.0, 1.0), True,
                          "a judge's choice between the two captions of a pair, asked in both orders "
                          "(1 preferred, 0 not, 0.5 when the orders disagree); pairwise benchmarks only",
                          "CLAIR-style pairwise judging (Chan et al., EMNLP 2023)", undefined=_UNANSWERED),)

    @classmethod
    def cannot_stream(cls, options: dict) -> str | None:
        return f"{cls.family} judges pairs, whose two members sit in the two halves of the input"

    def _layout(self, candidates, references, images) -> int:
        n, odd = divmod(len(candidates), 2)
        if odd or any(list(references[i]) != list(references[n + i]) for i in range(n)) or (
                images is not None and any(images[i] != images[n + i] for i in range(n))):
            raise InputError(f"{self.family} judges pairs of captions: it runs on pairwise benchmarks (capeval bench "
                             "pascal50s, abstract50s, or --file with a, b, references, preferred); a direct call "
                             "gives the A captions then the B captions, unit i and n+i sharing references and image")
        return n

    def requests(self, candidates, references, images) -> list[Request]:
        n = self._layout(candidates, references, images)
        seen: list[tuple[bytes, str, str] | None] = [None] * n if images is None else [judge_image(images[i]) for i in range(n)]
        out = []
        for first, second in ((0, n), (n, 0)):  # every pair in order (a, b), then every pair in order (b, a)
            for i in range(n):
                text = pair_prompt(candidates[first + i], candidates[second + i], references[i])
                if seen[i] is None:
                    out.append(Request(text, self.shape))
                else:
                    data, digest, mime = seen[i]
                    out.append(Request(text, self.shape, image=data, image_digest=digest, image_mime=mime))
        return out

    def read(self, reply: Reply) -> tuple[float, str, float | None]:
        pick, reason = parse_pair(reply.text or "")
        return float(pick == "A"), reason, None

    def statistics(self, candidates: Sequence[str], references: Sequence[Sequence[str]], **kw: Any) -> Statistics:
        images = kw.get("images")
        st, members = self._pair_stats(self.verdicts(candidates, references, images), images is not None)
        st.details["explanations"] = members
        return st

    def _pair_stats(self, verdicts: list[Verdict], with_images: bool) -> tuple[Statistics, list[PairVerdict]]:
        n = len(verdicts) // 2
        members: list[PairVerdict] = []
        for side in ("a", "b"):
            for i in range(n):
                pref, picks, why = combine_orders(verdicts[i], verdicts[n + i])
                members.append(PairVerdict(i, side, pref, picks, (verdicts[i].reason, verdicts[n + i].reason),
                                           (verdicts[i].answer, verdicts[n + i].answer), why))
        ordered = verdicts  # unit i carries order (a, b) of pair i, unit n + i order (b, a): token sums stay whole
        rows = {
            self.family: np.array([m.score for m in members], dtype=np.float64),
            "failed": np.array([m.failure is not None for m in members], dtype=np.int64),
            "failure": np.array([m.failure or "" for m in members], dtype=np.str_),
            "disagree": np.array([m.side == "a" and m.preferred == "tie" for m in members], dtype=np.int64),
            "first_picked": np.array([v.failure is None and v.score == 1.0 for v in ordered], dtype=np.int64),
            "prompt_tokens": np.array([v.prompt_tokens for v in ordered], dtype=np.int64),
            "completion_tokens": np.array([v.completion_tokens for v in ordered], dtype=np.int64),
            "sent": np.array([v.sent for v in ordered], dtype=np.int64),
        }
        fields = {**self._fields(), "image": "yes" if with_images else "no"}
        return Statistics(len(members), self.aggregate((self.family,)), rows, {}, fields), members

    def aggregate(self, outputs: tuple[str, ...]) -> PairAggregate:
        return PairAggregate(self.family, self.allow, *self.prices)


__all__ = ["PairJudge", "PairVerdict", "PAIR_TEMPLATE", "combine_orders", "pair_prompt", "parse_pair"]
