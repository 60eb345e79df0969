"""QACE scoring: questions -> answers per context -> similarities -> averaging -> reduction.

Per caption and context: each component (SQuAD F1, BERTScore F, answerability) is the mean over
the caption's questions, and the QACE score is the mean of the three (the paper's default). A
caption without questions scores 0 (QuestEval's rule).

Reductions over references (named in the signature as ``red``):

* ``mean``   (default; the paper's protocol): each reference is its own context, then the mean.
* ``max``    each reference is its own context, then the max (QuestEval's default), per output.
* ``merged`` one context made of all references (the standard multi-reference setting).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .similarity import token_f1
from .types import COMPONENTS, AnswerRow, Explanation

REDUCTIONS = ("mean", "max", "merged")


@dataclass
class QaceOutput:
    """Per-caption arrays ``qace``, ``f1``, ``bertscore``, ``answerability`` and the tables."""

    scores: dict[str, np.ndarray]
    explanations: list[Explanation]
    #: Per caption: model inputs (question-generation and answering prompts) truncation cut, and
    #: the tokens it dropped (docs/LONG_CAPTIONS.md); zero for the offline backend, which has no window.
    cut_texts: np.ndarray | None = None
    cut_tokens: np.ndarray | None = None


def contexts_for(refs: Sequence[str], reduction: str) -> list[tuple[str, ...]]:
    if reduction == "merged":
        return [tuple(refs)]
    return [(r,) for r in refs]


def _reduce(values: np.ndarray, reduction: str) -> float:
    return float(np.max(values)) if reduction == "max" else float(np.mean(values))


def _row_cuts(questions, ctxs, qg_cut, qa_cut) -> tuple[np.ndarray, np.ndarray]:
    """Per caption, prompts cut and tokens dropped, from the components' ``last_cut`` (question
    generation: per caption, per prompt; answering: per (question, context) item, in order)."""
    n = len(questions)
    texts, tokens = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    at = 0
    for i, (qs, cs) in enumerate(zip(questions, ctxs)):
        parts = list(qg_cut[i]) if qg_cut is not None and i < len(qg_cut) else []
        if qa_cut is not None:
            parts += list(qa_cut[at:at + len(qs) * len(cs)])
        at += len(qs) * len(cs)
        texts[i] = sum(1 for k in parts if k > 0)
        tokens[i] = sum(parts)
    return texts, tokens


class QacePipeline:
    """Pluggable QACE: ``qg.generate(cands)``, ``qa.answer([(question, context)])``,
    ``bertscore(pairs)`` (answer pairs -> BERTScore F)."""

    def __init__(self, qg, qa, bertscore):
        self.qg, self.qa, self.bertscore = qg, qa, bertscore

    def run(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
            reduction: str = "mean") -> QaceOutput:
        if reduction not in REDUCTIONS:
            raise InputError(f"qace: reduction must be one of {REDUCTIONS}, got {reduction!r}")
        if len(candidates) != len(references):
            raise InputError(f"qace: {len(candidates)} candidates but {len(references)} reference lists")
        questions = self.qg.generate(candidates)
        ctxs = [contexts_for(r, reduction) for r in references]
        items = [(q, c) for qs, cs in zip(questions, ctxs) for q in qs for c in cs]
        answers = self.qa.answer(items)
        cut_texts, cut_tokens = _row_cuts(questions, ctxs, getattr(self.qg, "last_cut", None),
                                          getattr(self.qa, "last_cut", None))
        pairs = [(q.answer, a.text) for (q, _), a in zip(items, answers)]
        bs = np.clip(self.bertscore(pairs), 0.0, 1.0) if pairs else np.zeros(0)

        n = len(candidates)
        out = {k: np.zeros(n) for k in ("qace",) + COMPONENTS}
        explanations: list[Explanation] = []
        k = 0
        for i, (qs, cs) in enumerate(zip(questions, ctxs)):
            exp = Explanation(candidates[i], [" | ".join(c) for c in cs])
            comp = np.zeros((len(qs), len(cs), 3))  # question x context x component
            for qi, q in enumerate(qs):
                row = AnswerRow(q.text, q.kind, q.span, q.answer, [], [], [], [])
                for ci in range(len(cs)):
                    a = answers[k]
                    f1 = token_f1(q.answer, a.text) if a.text else 0.0
                    comp[qi, ci] = (f1, bs[k], a.answerability)
                    row.answers.append(a.text)
                    row.f1.append(f1)
                    row.bertscore.append(float(bs[k]))
                    row.answerability.append(float(a.answerability))
                    k += 1
                row.score = _reduce(comp[qi].mean(axis=1), reduction)
                # Agreement of the best context: answerability alone must not vouch for a wrong answer.
                row.support = float(comp[qi, :, :2].mean(axis=1).max()) if len(cs) else 0.0
                exp.rows.append(row)
            if qs:
                per_ctx = comp.mean(axis=0)  # context x component
                per_ctx_qace = per_ctx.mean(axis=1)
                for j, name in enumerate(COMPONENTS):
                    out[name][i] = _reduce(per_ctx[:, j], reduction)
                out["qace"][i] = _reduce(per_ctx_qace, reduction)
            exp.scores = {name: float(out[name][i]) for name in ("qace",) + COMPONENTS}
            explanations.append(exp)
        return QaceOutput(out, explanations, cut_texts, cut_tokens)
