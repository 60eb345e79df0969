"""Scoring binary forced-choice distractor tasks (Hodosh & Hockenmaier 2016): per-task accuracy,
their plain mean and the worst task.

The items themselves are built by :mod:`capeval.data.distractor_tasks` (the rules are in
docs/DISTRACTORS.md); this module only needs each item's task, so it takes any object with a
``task`` attribute and stays independent of how items are made.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..errors import InputError
from ..signature import Signature
from .pairwise import PairwiseAccuracy, distractor_accuracy


class _Item(Protocol):
    task: str


@dataclass(frozen=True)
class DistractorSummary:
    """Per-task accuracy (percent), their plain mean, and the worst task."""

    per_task: dict[str, float]
    mean: float
    worst: float
    worst_task: str
    ties: dict[str, int]
    n: dict[str, int]
    tie_policy: str
    seed: int | None
    accuracy: PairwiseAccuracy = field(repr=False)

    def signature(self, **protocol: object) -> Signature:
        return Signature.make("distractors", **protocol, **self.accuracy.signature_fields())


def summarize(accuracy: PairwiseAccuracy) -> DistractorSummary:
    """Mean and worst case over the task categories of a distractor accuracy result."""
    pct = accuracy.percent()
    per_task = {k: v for k, v in pct.items() if k != "mean"}
    if not per_task:
        raise InputError("no distractor tasks to summarise")
    worst_task = min(per_task, key=lambda k: (per_task[k], k))
    return DistractorSummary(per_task, pct["mean"], per_task[worst_task], worst_task, dict(accuracy.ties),
                             dict(accuracy.n), accuracy.tie_policy, accuracy.seed, accuracy)


def evaluate(
    items: Sequence[_Item],
    score_correct: Sequence[float],
    score_distractor: Sequence[float],
    *,
    tie_policy: str = "half",
    seed: int | None = None,
    higher_is_better: bool = True,
) -> DistractorSummary:
    """Accuracy per task of one metric's scores on ``items`` (correct vs distractor)."""
    if not (len(items) == len(score_correct) == len(score_distractor)):
        raise InputError(f"{len(items)} items but {len(score_correct)} correct and {len(score_distractor)} "
                         "distractor scores")
    acc = distractor_accuracy(score_correct, score_distractor, [it.task for it in items], tie_policy=tie_policy,
                              seed=seed, higher_is_better=higher_is_better)
    return summarize(acc)


__all__ = ["DistractorSummary", "summarize", "evaluate"]
