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
from ..stats.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, BootstrapCI, bootstrap_correlation
from ..stats.correlation import SHORT, canonical_statistic
from ..stats.experiments import (CorrelationExperiment, PairwiseExperiment, SystemExperiment,
                                correlation_experiment, defined_mask, pairwise_experiment, system_experiment)
from ..stats.pairwise import TIE_POLICIES, bootstrap_accuracy
from ..metrics.registry import METRIC_SETS, family_for
from ..plan import ScoringPlan
from ..signature import signature_line
from ..service.cache import ScoreCache
from ..service.scoring import REF_MODES, score_units, score_units_each_ref
from .units import unit_lists

#: ``capeval bench all`` runs these (the stable contract names).
CORE_BENCHMARKS = ("flickr8k-expert", "flickr8k-cf", "composite", "pascal50s", "abstract50s")
#: ``capeval bench modern``: the sets recent metric papers report (Polos, DENEB, EXPERT, Pearl).
MODERN_BENCHMARKS = ("thumb", "nebula", "polaris")
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
    #: direction of each metric column, user scores columns included (they are not registered)
    higher_is_better: dict[str, bool] = field(default_factory=dict)

    def signature(self) -> str:
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
        return signature_line(self.name, **fields)


def higher_is_better(metric: str, cls=None) -> bool:
    """Whether a higher ``metric`` is better; ``cls`` is its family when the caller has it."""
    for out in (cls or family_for(metric)).outputs:
        if out.name == metric:
            return out.higher_is_better
    return True


def _family(metric: str, families: dict[str, type] | None):
    """The family of ``metric``: from the run's ``{name: family}`` map when the caller has it."""
    return families[metric] if families is not None and metric in families else family_for(metric)


def undefined_outputs(metrics: Sequence[str], families: dict[str, type] | None = None) -> set[str]:
    """Outputs for which NaN is a defined value (``OutputInfo.undefined``, e.g. SPICE categories);
    ``families`` is the run's ``{name: family}`` map when the caller has it."""
    out = set()
    for metric in metrics:
        for info in _family(metric, families).outputs:
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


def plan_for(metrics: Sequence, *, tokenizer: str = "ptb", options: dict | None = None,
             scores: dict | None = None) -> ScoringPlan:
    """The run's :class:`~capeval.plan.ScoringPlan`: metric names stripped and deduplicated
    (a comma list may hold blanks), a user's Metric subclass or callable registered under its
    name (``capeval.metrics.user``), options checked, scores files read. With scores files
    alone, no metric needs to run."""
    from ..metrics.user import as_metric_name

    names = [as_metric_name(m) if not isinstance(m, str) else m for m in metrics]
    names = list(dict.fromkeys(m.strip() for m in names if m.strip()))
    return ScoringPlan.build(names, tokenizer=tokenizer, options=options, scores=scores)


def run_benchmark(
    name: str | None,
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
    images_dir: Path | str | None = None,
    scores: dict[str, Path | str] | None = None,
    allow_modified_data: bool = False,
    line_breaks: str = "space",
    plan: ScoringPlan | None = None,
    file: Path | str | None = None,
    file_kind: str | None = None,
) -> BenchResult:
    """Run one benchmark by name (see :func:`capeval.data.names`), or a user's judgment file.

    ``file`` (``name=None``): the user's judgments (:mod:`capeval.data.judgment_files`), run as a
    named benchmark with its SHA-256 in the signature; ``file_kind`` forces their kind.

    Its data files are first checked against capeval's packaged checksums; a file that
    differs is refused (:class:`~capeval.errors.ResourceDamaged`) unless
    ``allow_modified_data``, which marks the benchmark signature ``data:modified``.

    Line breaks inside the table's captions are read as spaces, counted in the benchmark
    signature (``breaks:space:N``); ``line_breaks="refuse"`` refuses the table instead.

    ``seed`` drives every random choice of the run (random metric-tie breaking, bootstrap)
    and is recorded. ``bootstrap`` > 0 adds a percentile CI for the headline number of each
    metric from that many row resamples.

    ``metrics`` may hold a user's metric (a ``UserMetric`` subclass or a callable, see
    :mod:`capeval.metrics.user`). ``images_dir`` resolves the table's image file names for the
    metrics that read images. ``scores`` maps a column name to a user's scores file (one score
    per unit id of ``capeval data export``; higher is better); it becomes a metric column.

    ``plan`` (:func:`plan_for`) holds the metrics, tokenizer, options and scores files resolved
    once, for a caller that runs several benchmarks with them; ``metrics`` is then not read,
    and ``options`` and ``scores`` are not given.
    """
    plan = _run_plan(plan, metrics, tokenizer, options, scores)
    metrics, families = list(plan.metrics), plan.family_map()  # each name resolved once, in the plan
    user = [c.name for c in plan.columns]
    pictures = _image_source(families, images_dir)
    _check_choices(tie_policy, aggregate)
    start = time.perf_counter()
    table, base_fn, seen = _source(name, file, file_kind, statistic, dict(load_options or {}), root, plan, families,
                                   allow_seen, allow_modified_data, line_breaks)
    name = table.name if file is not None else name
    cache = cache if cache is not None else ScoreCache()
    hib = {m: higher_is_better(m, families[m]) for m in metrics} | dict.fromkeys(user, True)
    # NaN rows of these outputs mean "undefined" (SPICE's categories): skipped per metric and
    # counted in the signature, as SPICE's own summary skips them; NaN elsewhere is an error.
    undef = undefined_outputs(metrics, families)
    say = progress or (lambda msg: None)
    lists = unit_lists(table)
    if user:
        _check_user_ids(plan, lists, name)
    hashes: dict[str, str] = {}  # image content hashes, taken once per file in this run

    def score_fn(ul):
        return _score_list(ul, plan, base_fn, pictures, name, hashes, cache=cache, progress=say)

    run = _Run(name, [*metrics, *user], score_fn, undef, hib, seed, bootstrap, say)
    result = _run_table(run, table, lists, statistic=statistic, tie_policy=tie_policy, aggregate=aggregate)
    for m, reasons in seen.items():
        result.metric_signatures[m] += "|seen:" + "+".join(reasons)
    result.seen = seen
    result.higher_is_better = dict(hib)
    result.seconds = time.perf_counter() - start
    return result


def _load_table(name, root, load_options, ref_mode: str, families, with_user: bool, allow_modified: bool,
                line_breaks: str = "space"):
    """The benchmark's table, checked against the packaged checksums and marked with its
    reference mode, and the scoring function that mode calls for."""
    from .. import data
    from ..data.integrity import check_benchmark_data

    if ref_mode not in REF_MODES:
        raise InputError(f"unknown ref_mode {ref_mode!r}; choose one of {', '.join(REF_MODES)}")
    modified = check_benchmark_data(name, root, allow_modified=allow_modified)
    table = data.load(name, root, line_breaks=line_breaks, **load_options)
    if modified:
        table = dataclasses.replace(table, protocol={**table.protocol, "data": "modified"})
    return _with_ref_mode(table, name, ref_mode, families, with_user)


def _with_ref_mode(table, name: str, ref_mode: str, families, with_user: bool):
    from .. import data

    if ref_mode not in REF_MODES:
        raise InputError(f"unknown ref_mode {ref_mode!r}; choose one of {', '.join(REF_MODES)}")
    if with_user and ref_mode != "set":
        raise InputError(f"scores files give one score per exported unit; ref_mode={ref_mode} scores each "
                         "reference separately, which they cannot")
    if getattr(table, "references", ()) is None:
        _check_reference_free(name, table, families, ref_mode)
    if ref_mode == "set":
        return table, score_units
    if isinstance(table, data.SystemTable):
        raise InputError(f"{name}: ref_mode={ref_mode} is defined for correlation and pairwise benchmarks, "
                         "not system-level ones")
    # Each row's score is a mean over single-reference scores: part of the table's protocol.
    return dataclasses.replace(table, protocol={**table.protocol, "ref_mode": ref_mode}), score_units_each_ref


def _check_choices(tie_policy: str, aggregate: str) -> None:
    if tie_policy not in TIE_POLICIES:
        raise InputError(f"unknown tie policy {tie_policy!r}; choose one of {', '.join(TIE_POLICIES)}")
    if aggregate not in AGGREGATES:
        raise InputError(f"unknown aggregate {aggregate!r}; choose one of {', '.join(AGGREGATES)}")


def _source(name, file, file_kind, statistic, load_options: dict, root, plan: ScoringPlan, families, allow_seen: bool,
            allow_modified: bool, line_breaks: str):
    """The table to run (a named benchmark's, or a user's judgment file's), its scoring
    function, and why a learned metric would not be held out on it."""
    metrics, with_user = list(plan.metrics), bool(plan.columns)
    ref_mode = str(load_options.pop("ref_mode", "set"))
    if file is not None:
        if name is not None:
            raise InputError(f"give a benchmark name ({name!r}) or a judgment file, not both")
        table, base_fn = _load_file(file, file_kind, statistic, load_options, ref_mode, families, with_user,
                                    line_breaks)
        _check_pairwise(table.name, table, families)
        return table, base_fn, _seen_metrics(table.name, metrics, plan.options, root, allow_seen, families, table)
    if name is None:
        raise InputError("give a benchmark name or a judgment file (file=...)")
    seen = _seen_metrics(name, metrics, plan.options, root, allow_seen, families)
    table, base_fn = _load_table(name, root, load_options, ref_mode, families, with_user, allow_modified, line_breaks)
    _check_pairwise(name, table, families)
    return table, base_fn, seen


def _load_file(file, kind, statistic, load_options, ref_mode: str, families, with_user: bool, line_breaks: str):
    """A user's judgment file as a table, read as a named benchmark's table is read after its loader."""
    from ..data.judgment_files import load_judgments_file
    from ..data.loading import refuse_line_breaks

    if load_options:
        raise InputError(f"a judgment file takes no loader options (got {', '.join(sorted(load_options))})")
    table = load_judgments_file(file, kind=kind, statistic=canonical_statistic(statistic or "kendall_tau_c"))
    refuse_line_breaks(table, table.name, line_breaks)
    return _with_ref_mode(table, table.name, ref_mode, families, with_user)


@dataclass
class _Run:
    """What every kind of table is scored and measured with in one run."""

    name: str
    metrics: list[str]  # the requested metrics, then the scores files' columns
    score: Callable  # a unit list -> its Result (through the cache)
    undef: set[str]  # outputs whose NaN means "undefined" (skipped, counted in the signature)
    hib: dict[str, bool]
    seed: int
    bootstrap: int
    say: Callable[[str], None]


def _run_table(run: _Run, table, lists, *, statistic, tie_policy: str, aggregate: str) -> BenchResult:
    from .. import data

    if isinstance(table, data.CorrelationTable):
        return _run_correlation(run, table, lists[0], statistic)
    if isinstance(table, data.PairwiseTable):
        return _run_pairwise(run, table, lists[0], tie_policy)
    if isinstance(table, data.SystemTable):
        return _run_system(run, table, lists, aggregate)
    raise TypeError(f"{run.name}: unexpected table type {type(table).__name__}")  # pragma: no cover


def _run_correlation(run: _Run, table, units, statistic: str | None) -> BenchResult:
    """Per-row scores against the human ratings, with a bootstrap CI of the headline statistic."""
    run.say(f"{run.name}: scoring {len(table)} rows")
    scored = run.score(units)
    stat = canonical_statistic(statistic or table.statistic)
    exp = correlation_experiment(table, scored.per_caption,
                                 statistics=_with(stat, ("kendall_tau_c", "kendall_tau_b", "pearson", "spearman")),
                                 skip_undefined=run.undef)
    result = BenchResult(run.name, "correlation", dict(table.protocol), run.metrics,
                         _note_skipped(scored.signatures, exp.defined, len(table)), exp,
                         statistic=stat, seed=run.seed, cached=scored.details["cached"],
                         scores=dict(scored.per_caption), human=table.human)
    if run.bootstrap:
        result.bootstrap = {}
        for m in run.metrics:
            x, h = np.asarray(scored.per_caption[m], dtype=float), np.asarray(table.human, dtype=float)
            if m in run.undef:
                keep = defined_mask(x)
                x, h = x[keep], h[keep]
            result.bootstrap[m] = bootstrap_correlation(x, h, stat, n_resamples=run.bootstrap, seed=run.seed)
    return result


def _run_pairwise(run: _Run, table, units, tie_policy: str) -> BenchResult:
    """Which caption of each pair each metric prefers, against the human choice."""
    run.say(f"{run.name}: scoring {2 * len(table)} candidates of {len(table)} pairs")
    scored = run.score(units)
    exp = pairwise_experiment(table, scored.per_caption, tie_policy=tie_policy, seed=run.seed,
                              higher_is_better=run.hib, skip_undefined=run.undef)
    result = BenchResult(run.name, "pairwise", dict(table.protocol), run.metrics,
                         _note_skipped(scored.signatures, exp.defined, len(table)), exp,
                         tie_policy=tie_policy, seed=run.seed, cached=scored.details["cached"],
                         scores=dict(scored.per_caption))
    if run.bootstrap:
        result.bootstrap = {m: bootstrap_accuracy(exp.results[m], n_resamples=run.bootstrap, seed=run.seed)
                            for m in run.metrics}
    return result


def _run_system(run: _Run, table, lists, aggregate: str) -> BenchResult:
    """One score per system (its corpus value or mean), correlated with the human ranking."""
    by_metric: dict[str, dict[str, float]] = {m: {} for m in run.metrics}
    sigs: dict[str, str] = {}
    cached: dict[str, bool] = {m: True for m in run.metrics}
    kept: dict[str, int] = {m: 0 for m in run.metrics if m in run.undef}
    units = 0
    for ul in lists:
        sys_id = ul.system
        run.say(f"{run.name}: scoring system {sys_id}")
        scored = run.score(ul)
        units += len(ul.candidates)
        for m in kept:
            kept[m] += int(defined_mask(scored.per_caption[m]).sum())
        for m in run.metrics:
            # Undefined units do not enter a mean (the corpus value already skips them).
            mean = np.nanmean if m in run.undef else np.mean
            by_metric[m][sys_id] = (scored.corpus[m] if aggregate == "corpus"
                                    else float(mean(scored.per_caption[m])))
            sigs.setdefault(m, scored.signatures[m])
            cached[m] = cached[m] and scored.details["cached"][m]
    exp = system_experiment(table, by_metric, aggregate=aggregate, higher_is_better=run.hib)
    return BenchResult(run.name, "system", dict(table.protocol), run.metrics, _note_skipped(sigs, kept, units), exp,
                       aggregate=aggregate, cached=cached)


def _run_plan(plan, metrics, tokenizer: str, options, scores) -> ScoringPlan:
    if plan is None:
        return plan_for(metrics, tokenizer=tokenizer, options=options, scores=scores)
    if options is not None or scores is not None:
        raise InputError("pass either options and scores or a plan (which holds them), not both")
    if tokenizer not in ("ptb", plan.tokenizer):
        raise InputError(f"tokenizer {tokenizer!r} differs from the plan's {plan.tokenizer!r}; the plan holds it")
    return plan


def _image_source(families: dict[str, type], images_dir):
    """The image directory when a metric reads images; refused early when one needs them and
    none was given. ``families`` maps each metric to its family."""
    from ..imagedir import ImageDir

    need = [m for m, cls in families.items() if cls.needs_images]
    if need and images_dir is None:
        raise InputError(f"{', '.join(need)} read(s) the images: pass --images DIR (Python: images_dir=DIR), the "
                         "directory holding the benchmark's image files (`capeval data images NAME --images DIR` "
                         "checks it)")
    if images_dir is None or not any(c.needs_images or c.accepts_images for c in families.values()):
        return None
    return ImageDir(images_dir)


def _check_user_ids(plan: ScoringPlan, lists, name: str) -> None:
    from ..scorefile import scores_for

    ids = [i for ul in lists for i in ul.ids()]
    for col in plan.columns:
        scores_for(col.file, ids, name)


def _score_list(ul, plan: ScoringPlan, base_fn, pictures, name, hashes, **kw):
    """Score one unit list with the plan (through the cache): its metrics, then its scores
    files' columns (``capeval.service.score_units``)."""
    images = None
    if pictures is not None:
        images = pictures.resolve(ul.images, f"{name} (`capeval data images {name} --images DIR` lists them)")
    extra = {"images": images, "image_hashes": hashes} if images is not None else {}
    if plan.columns:
        extra["ids"] = ul.ids()
    return base_fn(ul.candidates, ul.references, plan=plan, **kw, **extra)


def _check_pairwise(name: str, table, families: dict[str, type]) -> None:
    """A family that judges pairs (``Metric.pairwise``) runs on pairwise tables only."""
    from .. import data

    pairs = [m for m, cls in families.items() if cls.pairwise]
    if pairs and not isinstance(table, data.PairwiseTable):
        kind = "system-level" if isinstance(table, data.SystemTable) else "ratings"
        raise InputError(f"{', '.join(pairs)} judge(s) pairs of captions, and {name} is a {kind} benchmark; run it "
                         "on a pairwise one (pascal50s, abstract50s, or --file with a, b, references, preferred)")


def _check_reference_free(name: str, table, families: dict[str, type], ref_mode: str) -> None:
    """A split without references (``refs: none``) is refused, before any scoring, for every
    metric that compares a caption with references."""
    split = table.protocol.get("split")
    what = f"{name}" + (f" split {split}" if split else "")
    refs_based = [m for m, cls in families.items() if cls.needs_references]
    if refs_based:
        raise InputError(f"{', '.join(refs_based)} compare(s) captions with references, and {what} ships none "
                         "(refs:none); only reference-free metrics (e.g. clip_s, pac_s) run on it")
    if ref_mode != "set":
        raise InputError(f"ref_mode={ref_mode} scores each reference separately; {what} ships no references")


def _seen_metrics(name, metrics, options, root, allow_seen: bool, families=None, table=None) -> dict[str, list[str]]:
    """Why each learned metric's number on ``name`` would not be held out; ``table`` (a user's
    judgment file) is checked by its images and texts, as it has no name a model could know."""
    seen: dict[str, list[str]] = {}
    for m in metrics:
        cls = _family(m, families)
        if not cls.is_learned:
            continue
        from .seen import seen_reasons, seen_reasons_of_table

        prov = cls.provenance(dict((options or {}).get(cls.family) or {}))
        reasons = seen_reasons(name, prov, root=root) if table is None else seen_reasons_of_table(table, prov, root)
        if reasons and not allow_seen:
            raise InputError(
                f"{m}: model {prov.get('model', '?')!r} has seen {name} ({', '.join(reasons)}), so its number "
                f"there is not a held-out result; pass allow_seen=True (capeval bench --allow-seen) to report "
                f"it marked as seen, or use a model trained without {name}")
        if reasons:
            seen[m] = reasons
    return seen


def _with(first: str, rest: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((first, *rest)))


def resolve_names(name: str) -> list[str]:
    """``all`` → the core benchmarks, ``modern`` → THumB, Nebula and Polaris; otherwise a
    comma-separated list of names."""
    if name.strip() == "all":
        return list(CORE_BENCHMARKS)
    if name.strip() == "modern":
        return list(MODERN_BENCHMARKS)
    return [n.strip() for n in name.split(",") if n.strip()]


__all__ = ["BenchResult", "CORE_BENCHMARKS", "MODERN_BENCHMARKS", "DEFAULT_METRICS", "DEFAULT_RESAMPLES", "run_benchmark",
           "resolve_names", "higher_is_better"]
