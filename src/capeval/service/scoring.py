"""Score a benchmark's units once per (texts, metric, settings), through the cache."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..metrics.registry import family_for, plugin_origin
from ..result import Result
from .cache import CachedScores, ScoreCache, corpus_digest, images_digest, resource_state, score_key
from .codehash import family_code


def _result(per_unit: dict[str, np.ndarray], corpus: dict[str, float], signatures: dict[str, str],
            cached: dict[str, bool], n: int) -> Result:
    """A :class:`~capeval.result.Result` whose ``details["cached"][metric]`` says whether the
    metric's numbers were read back from the cache."""
    return Result(corpus, per_unit, signatures, n, details={"cached": cached})


def score_units(
    candidates: Sequence[str],
    references: Sequence[Sequence[str]],
    metrics: Sequence[str],
    *,
    tokenizer: str = "ptb",
    options: dict[str, dict[str, Any]] | None = None,
    cache: ScoreCache | None = None,
    progress: Callable[[str], None] | None = None,
    images: Sequence[str] | None = None,
    image_hashes: dict[str, str] | None = None,
    families: dict[str, type] | None = None,
) -> Result:
    """Cached metrics are read back; all missing ones run in ONE ``capeval.score`` call, so
    the whole unit list is one corpus (CIDEr's df over every unit) and tokenization runs once.

    ``images`` (one path per unit) go to the families that read them; their keys then hold the
    images' content hashes, taken once per file and kept in ``image_hashes`` (pass one dict for
    a whole run, so a benchmark's several calls read each image once). ``families`` is the
    run's ``{name: family}`` map when the caller resolved the names already.

    Only the resources of the requested families are looked up (for the cache keys): a run of
    the n-gram metrics resolves none."""
    from ..api import score

    options = options or {}
    cache = cache if cache is not None else ScoreCache(enabled=False)
    digest = corpus_digest(candidates, references)
    pictures: str | None = None
    every_resource: dict[str, Any] | None = None  # looked up once, when a family may read any
    per_unit: dict[str, np.ndarray] = {}
    corpus: dict[str, float] = {}
    signatures: dict[str, str] = {}
    cached: dict[str, bool] = {}
    keys: dict[str, str] = {}
    missing: list[str] = []
    families = families if families is not None else {}
    for m in metrics:
        cls = families[m] if m in families else family_for(m)
        fam_opts = options.get(cls.family)
        if not cls.cacheable:  # a user's callable: nothing names its code across processes
            missing.append(m)
            continue
        # A family whose numbers depend on a file (a learned model's weights) names its content.
        token = cls.cache_token(fam_opts or {})
        resources = None
        used = cls.resources_for(fam_opts or {})
        if cache.enabled and used is None:
            if every_resource is None:
                every_resource = resource_state()
            resources = every_resource
        elif cache.enabled:
            # Only what the family reads (and the Java tokenizer's jar when it runs), so that
            # installing e.g. another encoder leaves the other families' entries valid.
            resources = resource_state([*used, *(("ptb-jar",) if tokenizer == "ptb-java" else ())])
        key_opts = {**(fam_opts or {}), "_content": token} if token else fam_opts
        origin = plugin_origin(cls)
        if origin is not None:  # a plug-in's release may change its numbers
            key_opts = {**(key_opts or {}), "_plugin": origin}
        if images is not None and (cls.needs_images or cls.accepts_images):
            if pictures is None and cache.enabled:
                pictures = images_digest(images, image_hashes if image_hashes is not None else {})
            key_opts = {**(key_opts or {}), "_images": pictures}
        keys[m] = score_key(digest, m, variant=cls.variant, tokenizer=tokenizer, options=key_opts,
                            resources=resources, revision=cls.cache_revision,
                            code=family_code(cls, fam_opts) if cache.enabled else None)
        hit = cache.get(keys[m])
        if hit is not None and hit.metric == m and len(hit.per_unit) == len(candidates):
            per_unit[m], corpus[m], signatures[m] = hit.per_unit, hit.corpus, hit.signature
            cached[m] = True
        else:
            missing.append(m)
    if missing:
        res = score(candidates, references, missing, tokenizer=tokenizer, options=options, progress=progress,
                    images=images)
        for m in missing:
            per_unit[m] = res.per_caption[m]
            corpus[m] = res.corpus[m]
            signatures[m] = res.signatures[m]
            cached[m] = False
            if m in keys:
                cache.put(keys[m], CachedScores(m, res.per_caption[m], res.corpus[m], res.signatures[m]))
    order = list(metrics)
    return _result({m: per_unit[m] for m in order}, {m: corpus[m] for m in order},
                   {m: signatures[m] for m in order}, {m: cached[m] for m in order}, len(candidates))


#: ``-D ref_mode=...``: how a unit's references are scored. ``set`` (default) scores each
#: candidate against all its references at once, as the metric defines; ``each-mean`` scores it
#: against each reference separately and takes the mean (QACE App. A: "computed against each
#: reference separately and averaged"). Not named ``refs``: that key already picks *which*
#: references a loader keeps (e.g. composite ``refs=image-minus-human``).
REF_MODES = ("set", "each-mean")


def score_units_each_ref(
    candidates: Sequence[str],
    references: Sequence[Sequence[str]],
    metrics: Sequence[str],
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
        part = score_units([candidates[i] for i in rows], [[references[i][j]] for i in rows], metrics,
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
