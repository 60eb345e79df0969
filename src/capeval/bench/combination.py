"""Metric combination search on a correlation benchmark (scores from the cache)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..meta.combination import CombinationSearch, search_combinations
from ..meta.correlation import SHORT, canonical_statistic
from ..meta.experiments import correlation_units
from ..signature import Signature
from ..service.cache import ScoreCache
from .runner import _check_metrics, higher_is_better
from ..service.scoring import score_units


@dataclass
class CombinationRun:
    name: str
    protocol: dict[str, str]
    search: CombinationSearch
    metric_signatures: dict[str, str]

    def signature(self) -> Signature:
        fields: dict[str, Any] = {k: v for k, v in self.protocol.items() if k != "dataset"}
        s = self.search
        fields.update(stat=SHORT[s.statistic], norm=s.method, test="williams-pearson", df=s.williams_df)
        return Signature.make(self.name, **fields)


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

    metrics = _check_metrics(metrics)
    table = data.load(name, root, **(load_options or {}))
    if not isinstance(table, data.CorrelationTable):
        raise InputError(f"{name} is not a correlation benchmark; combination search needs human scores per row")
    cands, refs = correlation_units(table)
    scored = score_units(cands, refs, metrics, tokenizer=tokenizer, options=options,
                         cache=cache if cache is not None else ScoreCache())
    search = search_combinations(
        scored.per_caption, table.human, sizes=sizes, combos=combos, method=method,
        statistic=canonical_statistic(statistic or table.statistic),
        higher_is_better={m: higher_is_better(m) for m in metrics}, df=df,
    )
    return CombinationRun(name, dict(table.protocol), search, scored.signatures)


def _num(x: float | None):
    return None if x is None or not math.isfinite(x) else float(x)


def combination_to_json(run: CombinationRun) -> dict[str, Any]:
    def cand(c):
        w = c.williams
        return {"metrics": list(c.metrics), run.search.statistic: _num(c.value), "pearson": _num(c.pearson),
                "williams_vs_best_single": None if w is None else
                {"t": _num(w.t), "p": _num(w.p_value), "df": w.df, "r12": w.r12, "r13": w.r13, "r23": w.r23}}

    s = run.search
    return {"benchmark": run.name, "statistic": s.statistic, "normalisation": s.method, "n": s.n,
            "best_single": s.best_single, "singles": [cand(c) for c in s.singles],
            "combinations": [cand(c) for c in s.combinations],
            "_signatures": {"benchmark": str(run.signature()), "metrics": dict(run.metric_signatures)}}


def combination_markdown(run: CombinationRun, *, top: int = 10) -> str:
    s = run.search
    lines = [f"Best single metric: `{s.best_single}`. Williams test (one-sided, Pearson r, df {s.williams_df}) of each "
             f"row against it.\n",
             f"| metrics | 100 × {SHORT[s.statistic]} | 100 × Pearson r | Williams t | p |",
             "|---|---:|---:|---:|---:|"]
    for c in list(s.singles) + list(s.combinations[:top]):
        w = c.williams
        lines.append(f"| {c.name} | {100 * c.value:.3f} | {100 * c.pearson:.3f} | "
                     f"{'—' if w is None else f'{w.t:.3f}'} | {'—' if w is None else f'{w.p_value:.3g}'} |")
    lines.append("")
    lines.append(f"- `benchmark: {run.signature()}`")
    lines.extend(f"- `{m}: {sig}`" for m, sig in run.metric_signatures.items())
    return "\n".join(lines) + "\n"
