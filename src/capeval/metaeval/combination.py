"""Metric combination search on a correlation benchmark: load the table, score its rows through
the score cache, hand the scores to :func:`capeval.stats.combination.search_combinations`.
The JSON and Markdown renderings are in :mod:`capeval.metaeval.tables`."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..stats.combination import CombinationSearch, search_combinations
from ..stats.correlation import canonical_statistic
from ..stats.experiments import correlation_units
from ..service.cache import ScoreCache
from ..service.scoring import score_units
from ..signature import signature_line
from .runner import higher_is_better, plan_for


@dataclass
class CombinationRun:
    name: str
    protocol: dict[str, str]
    search: CombinationSearch
    metric_signatures: dict[str, str]

    def signature(self) -> str:
        fields: dict[str, Any] = {k: v for k, v in self.protocol.items() if k != "dataset"}
        return signature_line(self.name, **{**fields, **self.search.signature_fields()})


def run_combination(
    name: str,
    metrics: Sequence[str],
    *,
    sizes: Sequence[int] = (2, 3),
    combos: Sequence[Sequence[str]] | None = None,
    method: str = "z",
    statistic: str | None = None,
    df: str = "n-3",
    root: Path | str | None = None,
    cache: ScoreCache | None = None,
    tokenizer: str = "ptb",
    options: dict[str, dict[str, Any]] | None = None,
    load_options: dict[str, Any] | None = None,
) -> CombinationRun:
    from .. import data

    plan = plan_for(metrics, tokenizer=tokenizer, options=options)
    table = data.load(name, root, **(load_options or {}))
    if not isinstance(table, data.CorrelationTable):
        raise InputError(f"{name} is not a correlation benchmark; combination search needs human scores per row")
    cands, refs = correlation_units(table)
    scored = score_units(cands, refs, plan=plan, cache=cache if cache is not None else ScoreCache())
    search = search_combinations(
        scored.per_caption, table.human, sizes=sizes, combos=combos, method=method,
        statistic=canonical_statistic(statistic or table.statistic),
        higher_is_better={m: higher_is_better(m, cls) for m, cls in plan.family_map().items()}, df=df,
    )
    return CombinationRun(name, dict(table.protocol), search, scored.signatures)
