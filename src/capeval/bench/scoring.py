"""Score a benchmark's units once per (texts, metric, settings), through the cache."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..metrics.registry import family_for
from .cache import CachedScores, ScoreCache, corpus_digest, resource_state, score_key


@dataclass
class UnitScores:
    """Per-unit scores (input order), corpus scores and signatures for each metric."""

    per_unit: dict[str, np.ndarray]
    corpus: dict[str, float]
    signatures: dict[str, str]
    cached: dict[str, bool] = field(default_factory=dict)


def score_units(
    candidates: Sequence[str],
    references: Sequence[Sequence[str]],
    metrics: Sequence[str],
    *,
    tokenizer: str = "ptb",
    options: dict[str, dict[str, Any]] | None = None,
    cache: ScoreCache | None = None,
    progress: Callable[[str], None] | None = None,
) -> UnitScores:
    """Cached metrics are read back; all missing ones run in ONE ``capeval.score`` call, so
    the whole unit list is one corpus (CIDEr's df over every unit) and tokenization runs once."""
    from ..api import score

    options = options or {}
    cache = cache if cache is not None else ScoreCache(enabled=False)
    digest = corpus_digest(candidates, references)
    resources = resource_state() if cache.enabled else None
    out = UnitScores({}, {}, {})
    keys: dict[str, str] = {}
    missing: list[str] = []
    for m in metrics:
        cls = family_for(m)
        fam_opts = options.get(cls.family)
        # A family whose numbers depend on a file (a learned model's weights) names its content.
        token = cls.cache_token(fam_opts or {}) if hasattr(cls, "cache_token") else None
        keys[m] = score_key(digest, m, variant=cls.variant, tokenizer=tokenizer,
                            options={**(fam_opts or {}), "_content": token} if token else fam_opts,
                            resources=resources)
        hit = cache.get(keys[m])
        if hit is not None and hit.metric == m and len(hit.per_unit) == len(candidates):
            out.per_unit[m], out.corpus[m], out.signatures[m] = hit.per_unit, hit.corpus, hit.signature
            out.cached[m] = True
        else:
            missing.append(m)
    if missing:
        res = score(candidates, references, missing, tokenizer=tokenizer, options=options, progress=progress)
        for m in missing:
            out.per_unit[m] = res.per_caption[m]
            out.corpus[m] = res.corpus[m]
            out.signatures[m] = res.signatures[m]
            out.cached[m] = False
            cache.put(keys[m], CachedScores(m, res.per_caption[m], res.corpus[m], res.signatures[m]))
    order = list(metrics)
    return UnitScores({m: out.per_unit[m] for m in order}, {m: out.corpus[m] for m in order},
                      {m: out.signatures[m] for m in order}, {m: out.cached[m] for m in order})
