"""Scoring the control and the perturbed captions with :func:`capeval.score`.

Each perturbation is scored in its own call over the same items, so every call sees the same
references: a corpus-dependent metric (CIDEr-D's document frequencies come from the scored set's
references) then scores a perturbed caption against the same statistics as its control. For such
metrics (and the families that reuse their scores, ``learned``, with the metrics they read) the
items a rule skipped keep their control caption in the call and their scores are not read; other
metrics score only the applicable items. The control is one call with every metric on every
item, which is exactly ``capeval.score`` on those rows.

Scores files (``--scores NAME=FILE``) give one number per unit id (:func:`capeval.scorefile.unit_id`
of the candidate, references and image name), as ``capeval stress --export`` writes the units.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..metrics.registry import family_for
from ..plan import ScoringPlan, empty_prepass
from .items import StressItem

CONTROL = "control"


@dataclass
class Scored:
    #: metric -> variant -> one score per item (NaN where the variant skipped the item)
    scores: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    signatures: dict[str, str] = field(default_factory=dict)
    #: family (or scores column) -> seconds spent scoring it, over all variants
    seconds: dict[str, float] = field(default_factory=dict)


def full_row_metrics(metrics: Sequence[str], options: dict[str, dict[str, Any]] | None,
                     family_of: Callable[[str], type] = family_for) -> set[str]:
    """Metrics scored on every item in every call: corpus-dependent ones, families that reuse
    other scores, and the requested metrics those read (so they are computed once, shared).
    ``family_of`` resolves a name (a plan's :meth:`~capeval.plan.ScoringPlan.family_of`)."""
    out: set[str] = set()
    for m in metrics:
        cls = family_of(m)
        if whole_input(cls, (options or {}).get(cls.family) or {}):
            out.add(m)
            reads = set(cls.reads((options or {}).get(cls.family) or {}))
            out.update(x for x in metrics if x in reads)
    return out


def whole_input(cls, options: dict[str, Any]) -> bool:
    """Whether a family's score of a row may depend on the other rows of the call: a corpus
    pre-pass (CIDEr's df), scores built from other metrics (SPIDEr, ``learned``), or any other
    reason the family gives for not scoring chunk by chunk (BERTScore's batch padding floor,
    QACE-Ref)."""
    return bool(cls.uses_df or cls.reuses_scores or cls.reads(options) or cls.cannot_stream(options) is not None
                or _has_prepass(cls, options))


def _has_prepass(cls, options: dict[str, Any]) -> bool:
    """Whether the family's instance with ``options`` has a corpus pre-pass (BERTScore with idf;
    not without): :func:`capeval.plan.empty_prepass`."""
    from ..api import instantiate
    from ..metrics.base import Metric

    if cls.prepass is Metric.prepass:
        return False  # not built just to ask
    with instantiate(cls, options) as metric:
        return empty_prepass(metric) is not None


def unit_ids(items: Sequence[StressItem], texts: Sequence[str]) -> list[str]:
    from ..scorefile import unit_id

    return [unit_id(t, list(it.references), it.image) for it, t in zip(items, texts)]


def _timed_score(seconds: dict[str, float], cands, refs, metrics, plan: ScoringPlan, **kw):
    """``capeval.score`` of some of ``plan``'s metrics, adding each family's wall time to
    ``seconds`` (a family's time runs from its progress call to the next one, or to the end of
    the call)."""
    from ..api import score

    marks: list[tuple[str, float]] = []
    res = score(cands, refs, metrics, plan=plan, progress=lambda fam: marks.append((fam, time.perf_counter())),
                **kw)
    end = time.perf_counter()
    for (fam, t0), nxt in zip(marks, [*marks[1:], ("", end)]):
        seconds[fam] = seconds.get(fam, 0.0) + nxt[1] - t0
    return res


def score_variants(
    items: Sequence[StressItem],
    variants: dict[str, list[str | None]],
    plan: ScoringPlan,
    *,
    images: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Scored:
    """Scores of every metric and scores-file column of ``plan`` on every variant
    (``variants[name][i]`` is item i's perturbed text, None where skipped; the control's texts
    are the candidates)."""
    from ..scorefile import scores_for

    say = progress or (lambda msg: None)
    out = Scored()
    refs = [list(it.references) for it in items]
    n = len(items)
    metrics = list(plan.metrics)
    user = {c.name: c.file for c in plan.columns}
    full = full_row_metrics(metrics, plan.options, plan.family_of)
    part = [m for m in metrics if m not in full]
    kw: dict[str, Any] = {"plan": plan}
    for m in [*metrics, *(user or {})]:
        out.scores[m] = {}
    ids: dict[str, list[str | None]] = {}
    if user:
        for name, texts in variants.items():
            rows = [i for i, t in enumerate(texts) if t is not None]
            got = unit_ids([items[i] for i in rows], [str(texts[i]) for i in rows])
            ids[name] = [None] * n
            for i, u in zip(rows, got):
                ids[name][i] = u
        union = list(dict.fromkeys(u for col in ids.values() for u in col if u is not None))
        for sf in user.values():
            try:
                scores_for(sf, union, "stress")  # the file holds exactly the exported units
            except InputError as e:
                raise InputError(f"{e}. For capeval stress, score the units `capeval stress ... --export FILE` "
                                 "writes with the same source, --n, --seed and perturbations") from None
    for name, texts in variants.items():
        say(f"scoring {name}")
        applicable = [i for i, t in enumerate(texts) if t is not None]
        filled = [t if t is not None else it.candidate for it, t in zip(items, texts)]
        calls = [(metrics, list(range(n)))] if name == CONTROL else [(sorted(full, key=list(metrics).index),
                                                                        list(range(n))), (part, applicable)]
        for names, rows in calls:
            if not names:
                continue
            vec = {m: np.full(n, np.nan) for m in names}
            if rows:
                extra = {"images": [images[i] for i in rows]} if images is not None else {}
                res = _timed_score(out.seconds, [filled[i] for i in rows], [refs[i] for i in rows], list(names),
                                   **kw, **extra)
                for m in names:
                    vec[m][rows] = res.per_caption[m]
                    if name == CONTROL:
                        out.signatures[m] = res.signatures[m]
            for m in names:
                if name != CONTROL:
                    vec[m][[i for i in range(n) if texts[i] is None]] = np.nan
                out.scores[m][name] = vec[m]
        for col, sf in (user or {}).items():
            t0 = time.perf_counter()
            out.scores[col][name] = np.array([np.nan if u is None else sf.scores[u] for u in ids[name]],
                                             dtype=float)
            out.seconds[col] = out.seconds.get(col, 0.0) + time.perf_counter() - t0
    for col in plan.columns:
        out.signatures[col.name] = col.signature(corpus=None)
    return out
