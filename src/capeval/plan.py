"""One scoring plan: what a run scores, resolved once and handed to every consumer.

:meth:`ScoringPlan.build` turns metric names (or ``UserMetric`` classes and callables, which it
registers), per-family options and a user's scores files into a frozen plan: the requested
output names in order, their families in run order (families built on other metrics' scores
last), each family's checked options, the tokenizer, what the families need (tokens, images,
references, pip extras, resources) and which of them have a corpus pre-pass or cannot stream.
Scores files become precomputed columns.

``capeval.score``, the scoring service (``capeval.service.score_units``), benchmark runs
(``capeval.metaeval``), the stress suite and the CLI take a plan, so a run resolves each name
once and checks its options once, whatever it calls.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError, ResourceNotFound, UnknownMetricError
from .metrics.base import Metric
from .metrics.registry import METRIC_SETS, did_you_mean, family_for, get_family, third_party
from .scorefile import ScoresFile
from .signature import signature_line

DEFAULT_METRICS = METRIC_SETS["coco"]


def check_option_names(cls, opts: Any) -> None:
    """Refuse options ``cls`` does not take (naming them and the accepted ones), whether or not
    the family is being run: a misspelt option must not pass silently."""
    import inspect

    if not isinstance(opts, dict):
        raise InputError(f"options for {cls.family} must be a mapping of option names to values, got {opts!r}")
    params = inspect.signature(cls.__init__).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        accepted = [n for n, p in params.items() if n != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        unknown = [k for k in opts if k not in accepted]
        if unknown:
            hint = did_you_mean(unknown[0], accepted)
            raise InputError(f"unknown option(s) {', '.join(map(repr, unknown))} for {cls.family}; "
                             f"{hint + ' ' if hint else ''}accepted: {', '.join(accepted) or 'none'}")


def check_options(options: dict[str, Any] | None) -> None:
    """Every family named in ``options`` exists and takes the options given to it."""
    for fam, opts in (options or {}).items():
        check_option_names(get_family(fam), opts)


def read_score_columns(scores: Mapping[str, str | Path] | None, metrics: Sequence[str]) -> dict[str, ScoresFile]:
    """Column name -> the parsed scores file; a name may not shadow a requested or registered
    metric (its column would be mistaken for that metric's numbers)."""
    from .metrics.user import check_name
    from .scorefile import read_scores

    out = {}
    for col, path in (scores or {}).items():
        check_name(col, "scores column name")
        if col in metrics:
            raise InputError(f"scores column {col!r} is also a requested metric; name the column differently")
        try:
            family_for(col)
        except UnknownMetricError:
            pass
        else:
            raise InputError(f"scores column {col!r} is the name of a registered metric; name it differently "
                             f"(e.g. {col}_user)")
        out[col] = read_scores(path)
    return out


def empty_prepass(metric: Metric) -> Any | None:
    """The neutral corpus pre-pass state of this instance (its state of an empty batch), or None
    when its rows need none: a family that keeps :meth:`Metric.prepass`'s default, CIDEr with a
    df file, BERTScore without idf. The one answer to "has this family a pre-pass?" that
    streaming, the stress suite and the torchmetrics metrics ask of the instance they built
    (``capeval.score`` simply asks the instance's pre-pass of the rows it scores)."""
    if type(metric).prepass is Metric.prepass:
        return None
    return metric.prepass([], [])


@dataclass(frozen=True)
class FamilyPlan:
    """One family of a plan: the requested outputs it computes and its checked options."""

    cls: type[Metric]
    names: tuple[str, ...]
    #: the options given for the family (None when none were: cache keys tell the two apart)
    options: dict[str, Any] | None
    #: who wrote the family when capeval did not (``"plug-in dist==version"``, ``"user metric"``),
    #: else None: errors of third-party code name it (``api.contained``)
    origin: str | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "origin", third_party(self.cls.family))

    @property
    def family(self) -> str:
        return self.cls.family

    @property
    def cannot_stream(self) -> str | None:
        """Why the family with these options cannot be scored chunk by chunk, or None."""
        return self.cls.cannot_stream(dict(self.options or {}))


@dataclass(frozen=True)
class ScoresColumn:
    """A user's scores file as a precomputed column: per-unit numbers from the file (by unit
    id), corpus value their mean, signature naming the column and the file's SHA-256."""

    name: str
    file: ScoresFile

    def values(self, ids: Sequence[str]) -> np.ndarray:
        return np.array([self.file.scores[i] for i in ids], dtype=float)

    def signature(self, *, corpus: str | None = "mean") -> str:
        """``user:<name>|file:sha256:...|corpus:mean``; ``corpus=None`` leaves the corpus rule
        out (the stress suite reports per-item scores only)."""
        return signature_line(f"user:{self.name}", file=f"sha256:{self.file.sha256}", corpus=corpus)


@dataclass(frozen=True)
class ScoringPlan:
    """What a run scores, resolved once (build it with :meth:`build`)."""

    #: the requested output names, in the caller's order
    metrics: tuple[str, ...]
    #: their families in run order: families that reuse other scores (``learned``) last
    families: tuple[FamilyPlan, ...]
    tokenizer: str = "ptb"
    #: every family's options as given (requested or not; all checked)
    options: Mapping[str, dict[str, Any]] = None  # type: ignore[assignment]
    #: user scores files, as precomputed columns (not scored by ``capeval.score``)
    columns: tuple[ScoresColumn, ...] = ()
    #: the default metric set: a family that cannot score the input is skipped, with the reason
    defaulted: bool = False

    def __post_init__(self) -> None:
        if self.options is None:
            object.__setattr__(self, "options", {})
        _check_consistent(self)

    @classmethod
    def build(cls, metrics: Sequence | None = None, *, tokenizer: str = "ptb",
              options: Mapping[str, dict[str, Any]] | None = None,
              scores: Mapping[str, str | Path] | None = None) -> ScoringPlan:
        """The plan of ``metrics`` (output names, ``UserMetric`` subclasses or instances,
        callables; None: the coco set, which adapts to the input), ``options`` (family -> its
        constructor options, every one checked) and ``scores`` (column name -> a scores file,
        read here). Unknown names and options are errors naming them."""
        defaulted = metrics is None
        names = _metric_names(metrics, allow_none=bool(scores))
        options = _own(options)
        check_options(options)  # a misspelt family or option would otherwise be ignored silently
        groups: dict[type[Metric], list[str]] = {}
        for name in names:
            if not isinstance(name, str) or not name.strip():
                raise InputError(f"empty or non-string metric name {name!r} in {list(names)!r}")
            groups.setdefault(family_for(name), []).append(name)
        # Families that build on other metrics (``learned``) run last and reuse what the call
        # already computed, so no metric runs twice.
        ordered = sorted(groups.items(), key=lambda kv: kv[0].reuses_scores)
        families = tuple(FamilyPlan(c, tuple(ns), options.get(c.family)) for c, ns in ordered)
        columns = tuple(ScoresColumn(col, sf) for col, sf in read_score_columns(scores, names).items())
        return cls(tuple(names), families, tokenizer, options, columns, defaulted)

    # -- what the plan resolved --------------------------------------------------------------
    def family_of(self, name: str) -> type[Metric]:
        """The family of a requested output (resolved when the plan was built)."""
        for f in self.families:
            if name in f.names:
                return f.cls
        raise InputError(f"{name!r} is not a metric of this plan ({', '.join(self.metrics)})")

    def family_map(self) -> dict[str, type[Metric]]:
        """``{output name: family}`` of the requested outputs."""
        return {n: f.cls for f in self.families for n in f.names}

    @property
    def outputs(self) -> tuple[str, ...]:
        """Every column the plan yields: the metrics, then the scores files' columns."""
        return (*self.metrics, *(c.name for c in self.columns))

    @property
    def needs_tokens(self) -> bool:
        return any(f.cls.text_input == "tokenized" for f in self.families)

    @property
    def needs_references(self) -> bool:
        """False only when every family is reference-free (items may then have no references)."""
        return not self.families or any(f.cls.needs_references for f in self.families)

    @property
    def image_metrics(self) -> list[str]:
        """The requested outputs that read the images (and cannot run without them)."""
        return [n for f in self.families if f.cls.needs_images for n in f.names]

    @property
    def reads_images(self) -> bool:
        """Whether a family reads images when given (needs them, or accepts them)."""
        return any(f.cls.needs_images or f.cls.accepts_images for f in self.families)

    @property
    def cannot_stream(self) -> dict[str, str]:
        """Family -> why it cannot be streamed with its options; empty when all can."""
        return {f.family: why for f in self.families if (why := f.cannot_stream) is not None}

    def check_requirements(self, images: Sequence[str] | None = None, n: int = 0, ids: Sequence | None = None):
        """Before any scoring: every pip extra and resource the families lack, named at once,
        and the images an image metric reads (each would otherwise fail after the others ran).
        Returns the checked image paths (None without images)."""
        from .extras import require as require_extras
        from .validation import validate_images

        missing = []
        needs = {", ".join(f.names): f.cls.extras for f in self.families if f.cls.extras}
        try:
            if needs:
                require_extras(needs)
        except ResourceNotFound as e:
            missing.append(str(e))
        missing += [f"{', '.join(f.names)}: {why}" for f in self.families
                    if (why := f.cls.missing_resources(f.options or {})) is not None]
        if missing:
            raise ResourceNotFound("; ".join(missing))
        blind = self.image_metrics
        if blind and images is None:
            raise InputError(f"{', '.join(blind)} read(s) the images: pass images=[one path per candidate] "
                             "(CLI: capeval score/bench --images DIR)")
        if images is not None:
            images = validate_images(images, n, ids=ids)
        return images

    # -- derived plans -------------------------------------------------------------------------
    def only(self, names: Sequence[str]) -> ScoringPlan:
        """The plan of some of its metrics (same families, options and tokenizer; no scores
        columns), as a caller that read the others from a cache scores them. A name the plan
        does not hold is resolved (with the plan's options and tokenizer)."""
        if any(n not in self.metrics for n in names):
            return ScoringPlan.build(list(names), tokenizer=self.tokenizer, options=self.options)
        keep = set(names)
        families = tuple(replace(f, names=tuple(n for n in f.names if n in keep)) for f in self.families)
        return replace(self, metrics=tuple(names), families=tuple(f for f in families if f.names), columns=(),
                       defaulted=False)

    def with_options(self, options: Mapping[str, dict[str, Any]] | None) -> ScoringPlan:
        """The same names and families with other options (checked), e.g. a df file chosen after
        the families were known."""
        options = _own(options)
        check_options(options)
        families = tuple(replace(f, options=options.get(f.family)) for f in self.families)
        return replace(self, families=families, options=options)

    def column_scores(self, ids: Sequence[str]) -> tuple[dict[str, np.ndarray], dict[str, float], dict[str, str]]:
        """The scores columns' per-unit numbers for the units ``ids``, corpus values (their mean;
        NaN for no unit) and signatures."""
        per_unit, corpus, signatures = {}, {}, {}
        for col in self.columns:
            v = col.values(ids)
            per_unit[col.name] = v
            corpus[col.name] = float(v.mean()) if len(v) else float("nan")
            signatures[col.name] = col.signature()
        return per_unit, corpus, signatures


def _check_consistent(plan: ScoringPlan) -> None:
    """A plan made by hand (``ScoringPlan(metrics=..., families=...)``) holds what
    :meth:`ScoringPlan.build` would: every metric computed by exactly one of its families, each
    family a metric class computing the names it lists. Otherwise it is refused here, by name,
    rather than failing with a KeyError after other families have run."""
    for attr in ("metrics", "families", "columns"):
        value = getattr(plan, attr)
        if isinstance(value, list):
            object.__setattr__(plan, attr, value := tuple(value))
        if not isinstance(value, tuple):
            raise InputError(f"ScoringPlan {attr}={value!r}: expected a tuple; build plans with ScoringPlan.build(...)")
    bad = [m for m in plan.metrics if not isinstance(m, str)]
    if bad:
        raise InputError(f"ScoringPlan metrics {bad[0]!r}: expected output names; build plans with ScoringPlan.build(...)")
    computed: list[str] = []
    for f in plan.families:
        if not isinstance(f, FamilyPlan) or not (isinstance(f.cls, type) and issubclass(f.cls, Metric)):
            raise InputError(f"ScoringPlan family {f!r}: expected a FamilyPlan of a Metric class; build plans with "
                             "ScoringPlan.build(...)")
        own = set(f.cls.output_names())
        alien = [n for n in f.names if n not in own]
        if alien:
            raise InputError(f"ScoringPlan: family {f.cls.family!r} does not compute {alien[0]!r} (it computes "
                             f"{', '.join(sorted(own))}); build plans with ScoringPlan.build(...)")
        computed.extend(f.names)
    missing = [m for m in plan.metrics if m not in computed]
    extra = [m for m in computed if m not in plan.metrics]
    twice = [m for m in set(computed) if sum(m in f.names for f in plan.families) > 1]
    if missing or extra or twice:
        what = (f"metric {missing[0]!r} has no family in the plan" if missing
                else f"family output {extra[0]!r} is not among its metrics" if extra
                else f"metric {twice[0]!r} is computed by two families")
        raise InputError(f"ScoringPlan(metrics={plan.metrics!r}): {what}; build plans with ScoringPlan.build(...)")
    if any(not isinstance(c, ScoresColumn) for c in plan.columns):
        raise InputError("ScoringPlan columns: expected ScoresColumn entries; build plans with "
                         "ScoringPlan.build(..., scores=...)")


def _own(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The plan's copy of ``options`` (each family's mapping copied, values shared), so a caller
    that changes its dicts afterwards does not change the plan's."""
    return {fam: dict(opts) if isinstance(opts, dict) else opts for fam, opts in (options or {}).items()}


def _metric_names(metrics, allow_none: bool = False) -> list[str]:
    """The requested output names: the coco set by default, a user metric by its name; a string
    is one name or a comma-separated list (as ``capeval score -m``), and a set name (``coco``,
    ``ngram``) stands for its metrics."""
    if isinstance(metrics, str):  # list("bleu4") would be five one-letter names
        text, metrics = metrics, [m.strip() for m in metrics.split(",") if m.strip()]
        if not metrics:
            raise InputError(f"metrics={text!r} names no metric: pass a name (\"bleu4\"), a comma-separated "
                             "list (\"bleu4,cider_d\") or a list of names")
    metrics = list(metrics) if metrics is not None else list(DEFAULT_METRICS)
    if any(isinstance(m, str) and m in METRIC_SETS for m in metrics):
        expanded = [n for m in metrics for n in (METRIC_SETS.get(m, (m,)) if isinstance(m, str) else (m,))]
        metrics = [n for k, n in enumerate(expanded) if not isinstance(n, str) or n not in expanded[:k]]
    if not metrics and not allow_none:
        raise InputError("no metrics requested")
    if not all(isinstance(m, str) for m in metrics):
        from .metrics.user import as_metric_names

        metrics = as_metric_names(metrics)
    return metrics


def as_plan(metrics, plan: ScoringPlan | None, *, tokenizer: str, options) -> ScoringPlan:
    """``plan`` when the caller gave one, else the plan of ``metrics``. With a plan, ``metrics``
    (if given) picks some of its metrics (:meth:`ScoringPlan.only`), ``options`` must be None
    and the tokenizer the plan's or the default."""
    if plan is None:
        return ScoringPlan.build(metrics, tokenizer=tokenizer, options=options)
    if not isinstance(plan, ScoringPlan):
        raise InputError(f"plan must be a capeval ScoringPlan (ScoringPlan.build(...)), got {plan!r}")
    if options is not None:
        raise InputError("pass either options or a plan (which holds them), not both")
    if tokenizer not in ("ptb", plan.tokenizer):
        raise InputError(f"tokenizer {tokenizer!r} differs from the plan's {plan.tokenizer!r}; the plan holds it")
    return plan if metrics is None else plan.only(_metric_names(metrics))


__all__ = ["FamilyPlan", "ScoresColumn", "ScoringPlan", "check_option_names", "check_options", "empty_prepass",
           "read_score_columns"]
