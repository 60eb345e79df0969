"""The records a QACE run produces: questions, per-reference answers and the explanation table."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

COMPONENTS = ("f1", "bertscore", "answerability")


@dataclass(frozen=True)
class Question:
    """One question about a candidate caption.

    ``answer`` is the candidate's own answer (normalised lemmas, stop words removed); ``kind``
    says which part of the caption it probes (``entity`` for a noun chunk, ``count``,
    ``attribute``); ``slot`` is the structured form the offline QA reads (neural QA reads
    ``text``); ``span`` is the candidate text the answer came from.
    """

    text: str
    answer: str
    kind: str
    span: str
    slot: tuple = ()


@dataclass(frozen=True)
class Answer:
    """An answer from one context (a reference or the image). ``text`` is "" when unanswerable."""

    text: str
    answerability: float


@dataclass
class AnswerRow:
    """A question, the candidate's answer and, per context, the answer and its similarities."""

    question: str
    kind: str
    span: str
    candidate_answer: str
    answers: list[str]
    f1: list[float]
    bertscore: list[float]
    answerability: list[float]
    score: float = 0.0  # after the reference reduction: mean of the three components
    support: float = 0.0  # best context's mean of F1 and BERTScore (answer agreement)

    @property
    def flagged(self) -> bool:
        """True when no context gives an answer agreeing with the candidate's: the best
        context's mean of F1 and BERTScore is below 0.5 (an unanswerable answer scores 0)."""
        return self.support < FLAG_BELOW


FLAG_BELOW = 0.5


@dataclass
class Explanation:
    """The question/answer table of one caption and its component scores."""

    candidate: str
    contexts: list[str]
    rows: list[AnswerRow] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)

    def flagged(self) -> list[AnswerRow]:
        return [r for r in self.rows if r.flagged]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for row, r in zip(d["rows"], self.rows):
            row["flagged"] = r.flagged
        return d

    def table(self) -> str:
        """Plain-text table (what ``capeval explain`` prints)."""
        lines = [f"candidate: {self.candidate}"]
        for i, c in enumerate(self.contexts):
            lines.append(f"  context {i + 1}: {c}")
        lines.append("")
        for r in self.rows:
            mark = "!!" if r.flagged else "ok"
            lines.append(f"[{mark}] {r.question}  ({r.kind}; candidate answer: {r.candidate_answer!r}; score {r.score:.3f}, agreement {r.support:.3f})")
            for i, (a, f, b, u) in enumerate(zip(r.answers, r.f1, r.bertscore, r.answerability)):
                shown = a if a else "<unanswerable>"
                lines.append(f"      ctx {i + 1}: {shown!r:30s} F1 {f:.2f}  BERTScore {b:.2f}  answerable {u:.2f}")
        lines.append("")
        lines.append("scores: " + ", ".join(f"{k} {v:.4f}" for k, v in self.scores.items()))
        return "\n".join(lines)
