"""Run a benchmark: load its table, score its units (cached), apply the meta statistics."""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..meta.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, BootstrapCI, bootstrap_correlation
from ..meta.correlation import SHORT, canonical_statistic
from ..meta.distractors import DistractorSummary, summarize
from ..meta.experiments import (CorrelationExperiment, MetricAgreement, PairwiseExperiment, SystemExperiment,
                                correlation_experiment, correlation_units, defined_mask, metric_agreement,
                                pairwise_experiment, pairwise_units, system_experiment, system_units)
from ..meta.pairwise import TIE_POLICIES, bootstrap_accuracy
from ..metrics.registry import METRIC_SETS, family_for
from ..signature import Signature
from ..service.cache import ScoreCache
from ..service.scoring import REF_MODES, score_units, score_units_each_ref

#: ``capeval bench all`` runs these (the stable contract names).
CORE_BENCHMARKS = ("flickr8k-expert", "flickr8k-cf", "composite", "pascal50s", "abstract50s")
#: n-gram metrics: no Java, no models; the default metric set.
DEFAULT_METRICS = METRIC_SETS["ngram"]
AGGREGATES = ("corpus", "mean")


@dataclass
class BenchResult:
    name: str
    kind: str  # "correlation" | "pairwise" | "system"
    protocol: dict[str, str]
    metrics: list[str]
    metric_signatures: dict[str, str]
    experiment: CorrelationExperiment | PairwiseExperiment | SystemExperiment
    statistic: str | None = None  # headline statistic of a correlation benchmark
    tie_policy: str | None = None
    seed: int | None = None
    aggregate: str | None = None
    bootstrap: dict[str, BootstrapCI] = field(default_factory=dict)
    cached: dict[str, bool] = field(default_factory=dict)
    seconds: float = 0.0
    #: per-unit scores (input order) and, for correlation tables, the human ratings: raw
    #: material for figures (capeval.metaeval.report); not part of the JSON contract
    scores: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    human: np.ndarray | None = field(default=None, repr=False)
    #: learned metrics reported on data their model saw (allow_seen): metric -> reasons
    seen: dict[str, list[str]] = field(default_factory=dict)

    def signature(self) -> Signature:
        """The benchmark side of every number: dataset protocol + statistic (+ ties/seed)."""
        fields: dict[str, Any] = {k: v for k, v in self.protocol.items() if k != "dataset"}
        if self.kind == "correlation":
            fields["stat"] = SHORT[self.statistic]
        elif self.kind == "pairwise":
            fields["stat"] = "acc"
            fields["ties"] = self.tie_policy
            if self.tie_policy == "random":
                fields["tie_seed"] = self.seed
        else:
            fields["agg"] = self.aggregate
        if self.bootstrap:
            ci = next(iter(self.bootstrap.values()))
            fields.update(bs=ci.n_resamples, rs=ci.seed)
        return Signature.make(self.name, **fields)


def higher_is_better(metric: str) -> bool:
    for out in family_for(metric).outputs:
        if out.name == metric:
            return out.higher_is_better
    return True


def undefined_outputs(metrics: Sequence[str]) -> set[str]:
    """Outputs for which NaN is a defined value (``OutputInfo.undefined``, e.g. SPICE categories)."""
    out = set()
    for metric in metrics:
        for info in family_for(metric).outputs:
            if info.name == metric and info.undefined:
                out.add(metric)
    return out


def _note_skipped(signatures: dict[str, str], defined: dict[str, int], total: int) -> dict[str, str]:
    """Name the skipped rows in the metric's signature: ``undef:skip|defined:K/N``."""
    out = dict(signatures)
    for m, k in defined.items():
        head, sep, version = out[m].rpartition("|version:")
        out[m] = f"{head}|undef:skip|defined:{k}/{total}{sep}{version}" if sep else f"{out[m]}|undef:skip|defined:{k}/{total}"
    return out


def _check_metrics(metrics: Sequence[str]) -> list[str]:
    metrics = list(dict.fromkeys(m.strip() for m in metrics if m.strip()))
    if not metrics:
        raise InputError("no metrics requested")
    for m in metrics:
        family_for(m)  # raises UnknownMetricError listing the known ones
    return metrics


def run_benchmark(
    name: str,
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    root: Path | str | None = None,
    cache: ScoreCache | None = None,
    statistic: str | None = None,
    tie_policy: str = "half",
    seed: int = DEFAULT_SEED,
    tokenizer: str = "ptb",
    options: dict[str, dict[str, Any]] | None = None,
    bootstrap: int = 0,
    aggregate: str = "corpus",
    load_options: dict[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
    allow_seen: bool = False,
) -> BenchResult:
    """Run one benchmark by name (see :func:`capeval.data.names`).

    ``seed`` drives every random choice of the run (random metric-tie breaking, bootstrap)
    and is recorded. ``bootstrap`` > 0 adds a percentile CI for the headline number of each
    metric from that many row resamples.
    """
    from .. import data

    metrics = _check_metrics(metrics)
    if tie_policy not in TIE_POLICIES:
        raise InputError(f"unknown tie policy {tie_policy!r}; choose one of {', '.join(TIE_POLICIES)}")
    if aggregate not in AGGREGATES:
        raise InputError(f"unknown aggregate {aggregate!r}; choose one of {', '.join(AGGREGATES)}")
    seen = _seen_metrics(name, metrics, options, root, allow_seen)
    start = time.perf_counter()
    load_options = dict(load_options or {})
    ref_mode = str(load_options.pop("ref_mode", "set"))
    if ref_mode not in REF_MODES:
        raise InputError(f"unknown ref_mode {ref_mode!r}; choose one of {', '.join(REF_MODES)}")
    table = data.load(name, root, **load_options)
    if ref_mode != "set":
        if isinstance(table, data.SystemTable):
            raise InputError(f"{name}: ref_mode={ref_mode} is defined for correlation and pairwise benchmarks, "
                             "not system-level ones")
        # Each row's score is a mean over single-reference scores: part of the table's protocol.
        table = dataclasses.replace(table, protocol={**table.protocol, "ref_mode": ref_mode})
        score_fn = score_units_each_ref
    else:
        score_fn = score_units
    cache = cache if cache is not None else ScoreCache()
    hib = {m: higher_is_better(m) for m in metrics}
    # NaN rows of these outputs mean "undefined" (SPICE's categories): skipped per metric and
    # counted in the signature, as SPICE's own summary skips them; NaN elsewhere is an error.
    undef = undefined_outputs(metrics)
    say = progress or (lambda msg: None)

    if isinstance(table, data.CorrelationTable):
        say(f"{name}: scoring {len(table)} rows")
        cands, refs = correlation_units(table)
        scored = score_fn(cands, refs, metrics, tokenizer=tokenizer, options=options, cache=cache, progress=say)
        stat = canonical_statistic(statistic or table.statistic)
        exp = correlation_experiment(table, scored.per_caption,
                                     statistics=_with(stat, ("kendall_tau_c", "kendall_tau_b", "pearson", "spearman")),
                                     skip_undefined=undef)
        result = BenchResult(name, "correlation", dict(table.protocol), metrics,
                             _note_skipped(scored.signatures, exp.defined, len(table)), exp,
                             statistic=stat, seed=seed, cached=scored.details["cached"],
                             scores=dict(scored.per_caption), human=table.human)
        if bootstrap:
            result.bootstrap = {}
            for m in metrics:
                x, h = np.asarray(scored.per_caption[m], dtype=float), np.asarray(table.human, dtype=float)
                if m in undef:
                    keep = defined_mask(x)
                    x, h = x[keep], h[keep]
                result.bootstrap[m] = bootstrap_correlation(x, h, stat, n_resamples=bootstrap, seed=seed)
    elif isinstance(table, data.PairwiseTable):
        say(f"{name}: scoring {2 * len(table)} candidates of {len(table)} pairs")
        cands, refs = pairwise_units(table)
        scored = score_fn(cands, refs, metrics, tokenizer=tokenizer, options=options, cache=cache, progress=say)
        exp = pairwise_experiment(table, scored.per_caption, tie_policy=tie_policy, seed=seed, higher_is_better=hib,
                                  skip_undefined=undef)
        result = BenchResult(name, "pairwise", dict(table.protocol), metrics,
                             _note_skipped(scored.signatures, exp.defined, len(table)), exp,
                             tie_policy=tie_policy, seed=seed, cached=scored.details["cached"],
                             scores=dict(scored.per_caption))
        if bootstrap:
            result.bootstrap = {m: bootstrap_accuracy(exp.results[m], n_resamples=bootstrap, seed=seed)
                                for m in metrics}
    elif isinstance(table, data.SystemTable):
        by_metric: dict[str, dict[str, float]] = {m: {} for m in metrics}
        sigs: dict[str, str] = {}
        cached: dict[str, bool] = {m: True for m in metrics}
        kept: dict[str, int] = {m: 0 for m in metrics if m in undef}
        units = 0
        for sys_id, (cands, refs) in system_units(table).items():
            say(f"{name}: scoring system {sys_id}")
            scored = score_units(cands, refs, metrics, tokenizer=tokenizer, options=options, cache=cache,
                                 progress=say)
            units += len(cands)
            for m in kept:
                kept[m] += int(defined_mask(scored.per_caption[m]).sum())
            for m in metrics:
                # Undefined units do not enter a mean (the corpus value already skips them).
                mean = np.nanmean if m in undef else np.mean
                by_metric[m][sys_id] = (scored.corpus[m] if aggregate == "corpus"
                                        else float(mean(scored.per_caption[m])))
                sigs.setdefault(m, scored.signatures[m])
                cached[m] = cached[m] and scored.details["cached"][m]
        exp = system_experiment(table, by_metric, aggregate=aggregate, higher_is_better=hib)
        result = BenchResult(name, "system", dict(table.protocol), metrics, _note_skipped(sigs, kept, units), exp,
                             aggregate=aggregate, cached=cached)
    else:  # pragma: no cover - the loaders return only the three record types
        raise TypeError(f"{name}: unexpected table type {type(table).__name__}")
    for m, reasons in seen.items():
        result.metric_signatures[m] += "|seen:" + "+".join(reasons)
    result.seen = seen
    result.seconds = time.perf_counter() - start
    return result


def _seen_metrics(name, metrics, options, root, allow_seen: bool) -> dict[str, list[str]]:
    from .seen import provenance_of, seen_reasons

    seen: dict[str, list[str]] = {}
    for m in metrics:
        prov = provenance_of(m, options)
        if prov is None:
            continue
        reasons = seen_reasons(name, prov, root=root)
        if reasons and not allow_seen:
            raise InputError(
                f"{m}: model {prov.get('model', '?')!r} has seen {name} ({', '.join(reasons)}), so its number "
                f"there is not a held-out result; pass allow_seen=True (capeval bench --allow-seen) to report "
                f"it marked as seen, or use a model trained without {name}")
        if reasons:
            seen[m] = reasons
    return seen


# ---- statistics the HTML report draws beyond the tables ---------------------------------

@dataclass
class ReportStatistics:
    """Computed (by capeval.meta) before :mod:`capeval.metaeval.report` lays them out."""

    #: correlation benchmarks: metric–metric agreement and Williams p (None: < 2 metrics defined on every row)
    agreement: MetricAgreement | None = None
    #: the distractors benchmark: per-task mean / worst task per metric
    distractors: dict[str, DistractorSummary] = field(default_factory=dict)


def report_statistics(result: BenchResult, *, df: str, agreement: str) -> ReportStatistics:
    """The report's extra statistics for one result; ``df`` is the Williams df rule and
    ``agreement`` the metric–metric statistic."""
    out = ReportStatistics()
    if result.kind == "correlation" and result.human is not None:
        scores = {m: result.scores[m] for m in result.metrics if m in result.scores}
        out.agreement = metric_agreement(scores, result.human, statistic=agreement, df=df)
    elif result.kind == "pairwise" and result.protocol.get("dataset") == "distractors":
        out.distractors = {m: summarize(result.experiment.results[m]) for m in result.metrics}
    return out


def _with(first: str, rest: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((first, *rest)))


def resolve_names(name: str) -> list[str]:
    """``all`` → the core benchmarks; otherwise a comma-separated list of names."""
    if name.strip() == "all":
        return list(CORE_BENCHMARKS)
    return [n.strip() for n in name.split(",") if n.strip()]


__all__ = ["BenchResult", "CORE_BENCHMARKS", "DEFAULT_METRICS", "DEFAULT_RESAMPLES", "run_benchmark",
           "resolve_names", "higher_is_better", "ReportStatistics", "report_statistics"]
