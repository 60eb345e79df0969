"""Score a benchmark's units once per (texts, metric, settings), through the cache."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..metrics.registry import plugin_origin
from ..plan import ScoringPlan
from ..result import Result
from .cache import CachedScores, ScoreCache, corpus_digest, images_digest, resource_state, score_key
from .codehash import family_code


def _result(per_unit: dict[str, np.ndarray], corpus: dict[str, float], signatures: dict[str, str],
            cached: dict[str, bool], n: int) -> Result:
    """A :class:`~capeval.result.Result` whose ``details["cached"][metric]`` says whether the
    metric's numbers were read back from the cache."""
    return Result(corpus, per_unit, signatures, n, details={"cached": cached})


class _Keys:
    """Score-cache keys of one unit list. The digests of every resource and of the images are
    taken at most once, and only when a requested family's key holds them."""

    def __init__(self, digest: str, tokenizer: str, enabled: bool, images, image_hashes) -> None:
        self.digest, self.tokenizer, self.enabled = digest, tokenizer, enabled
        self.images, self.image_hashes = images, image_hashes if image_hashes is not None else {}
        self._every_resource: dict[str, Any] | None = None
        self._pictures: str | None = None

    def _resources(self, used: tuple[str, ...] | None) -> dict[str, Any] | None:
        if not self.enabled:
            return None
        if used is None:  # the family may read any registered resource
            if self._every_resource is None:
                self._every_resource = resource_state()
            return self._every_resource
        # Only what the family reads (and the Java tokenizer's jar when it runs), so that
        # installing e.g. another encoder leaves the other families' entries valid.
        return resource_state([*used, *(("ptb-jar",) if self.tokenizer == "ptb-java" else ())])

    def __call__(self, metric: str, cls, fam_opts: dict[str, Any] | None) -> str:
        # A family whose numbers depend on a file (a learned model's weights) names its content.
        token = cls.cache_token(fam_opts or {})
        resources = self._resources(cls.resources_for(fam_opts or {}))
        key_opts = {**(fam_opts or {}), "_content": token} if token else fam_opts
        origin = plugin_origin(cls)
        if origin is not None:  # a plug-in's release may change its numbers
            key_opts = {**(key_opts or {}), "_plugin": origin}
        if self.images is not None and (cls.needs_images or cls.accepts_images):
            if self._pictures is None and self.enabled:
                self._pictures = images_digest(self.images, self.image_hashes)
            key_opts = {**(key_opts or {}), "_images": self._pictures}
        return score_key(self.digest, metric, variant=cls.variant, tokenizer=self.tokenizer, options=key_opts,
                         resources=resources, revision=cls.cache_revision,
                         code=family_code(cls, fam_opts) if self.enabled else None)


def score_units(
    candidates: Sequence[str],
    references: Sequence[Sequence[str]],
    metrics: Sequence[str] | None = None,
    *,
    tokenizer: str = "ptb",
    options: dict[str, dict[str, Any]] | None = None,
    cache: ScoreCache | None = None,
    progress: Callable[[str], None] | None = None,
    images: Sequence[str] | None = None,
    image_hashes: dict[str, str] | None = None,
    plan: ScoringPlan | None = None,
    ids: Sequence[str] | None = None,
) -> Result:
    """Cached metrics are read back; all missing ones run in ONE ``capeval.score`` call, so
    the whole unit list is one corpus (CIDEr's df over every unit) and tokenization runs once.

    ``images`` (one path per unit) go to the families that read them; their keys then hold the
    images' content hashes, taken once per file and kept in ``image_hashes`` (pass one dict for
    a whole run, so a benchmark's several calls read each image once).

    ``plan`` (:class:`~capeval.plan.ScoringPlan`) is the run's metrics, options and tokenizer,
    resolved once; without it they are built from ``metrics``, ``options`` and ``tokenizer``.
    A plan's scores files come back as columns after the metrics (per-unit numbers of the units
    ``ids``, corpus value their mean, ``cached`` False).

    Only the resources of the requested families are looked up (for the cache keys): a run of
    the n-gram metrics resolves none."""
    if plan is None:
        if not metrics:
            return _result({}, {}, {}, {}, len(candidates))
        plan = ScoringPlan.build(list(metrics), tokenizer=tokenizer, options=options)
    elif metrics is not None or options is not None:
        from ..errors import InputError

        raise InputError("pass either metrics and options or a plan (which holds them), not both")
    per_unit, corpus, signatures, cached = _scored(candidates, references, plan, cache, progress, images,
                                                   image_hashes)
    if plan.columns:
        if ids is None:
            from ..errors import InputError

            raise InputError("scores files give one score per unit id: pass ids=[one unit id per candidate]")
        cols = plan.column_scores(ids)
        for got, col in zip((per_unit, corpus, signatures), cols):
            got.update(col)
        cached.update(dict.fromkeys(cols[0], False))
    order = plan.outputs
    return _result({m: per_unit[m] for m in order}, {m: corpus[m] for m in order},
                   {m: signatures[m] for m in order}, {m: cached[m] for m in order}, len(candidates))


def _scored(candidates, references, plan: ScoringPlan, cache, progress, images, image_hashes):
    """Each metric of ``plan``: per-unit scores, corpus value, signature and whether it came
    from the cache."""
    from ..api import score

    cache = cache if cache is not None else ScoreCache(enabled=False)
    key_for = _Keys(corpus_digest(candidates, references), plan.tokenizer, cache.enabled, images, image_hashes)
    per_unit: dict[str, np.ndarray] = {}
    corpus: dict[str, float] = {}
    signatures: dict[str, str] = {}
    cached: dict[str, bool] = {}
    keys: dict[str, str] = {}
    missing: list[str] = []
    for m in plan.metrics:
        cls = plan.family_of(m)
        if not cls.cacheable:  # a user's callable: nothing names its code across processes
            missing.append(m)
            continue
        keys[m] = key_for(m, cls, plan.options.get(cls.family))
        hit = cache.get(keys[m])
        if hit is not None and hit.metric == m and len(hit.per_unit) == len(candidates):
            per_unit[m], corpus[m], signatures[m] = hit.per_unit, hit.corpus, hit.signature
            cached[m] = True
        else:
            missing.append(m)
    if missing:
        res = score(candidates, references, missing, plan=plan, progress=progress, images=images)
        for m in missing:
            per_unit[m] = res.per_caption[m]
            corpus[m] = res.corpus[m]
            signatures[m] = res.signatures[m]
            cached[m] = False
            if m in keys:
                cache.put(keys[m], CachedScores(m, res.per_caption[m], res.corpus[m], res.signatures[m]))
    return per_unit, corpus, signatures, cached


#: ``-D ref_mode=...``: how a unit's references are scored. ``set`` (default) scores each
#: candidate against all its references at once, as the metric defines; ``each-mean`` scores it
#: against each reference separately and takes the mean (QACE App. A: "computed against each
#: reference separately and averaged"). Not named ``refs``: that key already picks *which*
#: references a loader keeps (e.g. composite ``refs=image-minus-human``).
REF_MODES = ("set", "each-mean")


def score_units_each_ref(
    candidates: Sequence[str],
    references: Sequence[Sequence[str]],
    metrics: Sequence[str] | None = None,
    **kw: Any,
) -> Result:
    """Score every candidate against each of its references separately, then average per unit.

    One corpus call per reference *position* j: the rows' j-th references, each as the only
    reference (rows with fewer than j + 1 references sit that call out). This is running the coco
    scorers once per reference, the way per-reference baselines are produced; it matters only for
    CIDEr-D, whose df then comes from the N rows' j-th references (one call over all N×K pairs
    instead gives 42.0 rather than the published 41.9 on Flickr8k-Expert).

    Outputs whose NaN means "undefined" (SPICE categories) average over the references where they
    are defined; a unit with none stays NaN. The corpus value is the mean of the unit means.
    """
    from ..errors import InputError

    plan = kw.get("plan")
    if plan is not None:
        if plan.columns:
            raise InputError("scores files give one score per unit; ref_mode=each-mean scores each reference "
                             "separately, which they cannot")
        metrics = plan.metrics
    metrics = list(metrics or ())
    counts = np.array([len(r) for r in references], dtype=int)
    if len(counts) and counts.min() == 0:
        i = int(np.argmin(counts))
        raise InputError(f"unit {i} ({candidates[i]!r}) has no reference; ref_mode=each-mean needs at least one")
    n = len(candidates)
    images = kw.pop("images", None)
    sums = {m: np.zeros(n) for m in metrics}
    n_ok = {m: np.zeros(n) for m in metrics}
    signatures: dict[str, str] = {}
    cached = {m: True for m in metrics}
    for j in range(int(counts.max()) if n else 0):
        rows = np.flatnonzero(counts > j)
        part = score_units([candidates[i] for i in rows], [[references[i][j]] for i in rows],
                           metrics if plan is None else None,
                           images=None if images is None else [images[i] for i in rows], **kw)
        for m in metrics:
            v = np.asarray(part.per_caption[m], dtype=float)
            ok = ~np.isnan(v)
            sums[m][rows[ok]] += v[ok]
            n_ok[m][rows[ok]] += 1
            signatures.setdefault(m, part.signatures[m])
            cached[m] = cached[m] and part.details["cached"][m]
    per_unit: dict[str, np.ndarray] = {}
    for m in metrics:
        with np.errstate(invalid="ignore", divide="ignore"):
            per_unit[m] = np.where(n_ok[m] > 0, sums[m] / np.maximum(n_ok[m], 1), np.nan)
    corpus = {m: float(np.nanmean(v)) if np.any(~np.isnan(v)) else float("nan") for m, v in per_unit.items()}
    return _result(per_unit, corpus, signatures, cached, n)
