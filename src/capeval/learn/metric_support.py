"""What the learned metric families (``nneval``, ``learned``) share: their optional score cache,
the report of feature values outside the training range, and the check that the features were
computed by the metric variants the model was trained on."""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np

#: Warn when more than this share of the feature values lie outside the training range.
CLIP_WARN = 0.05


def score_cache(arg: bool | str):
    """The ``cache`` option: False (none), True (the default cache root) or a directory."""
    if not arg:
        return None
    from ..service.cache import ScoreCache

    return ScoreCache(None if arg is True else arg)


def range_report(family: str, model_name: str, outside: np.ndarray, labels: Sequence[str],
                 verb: str = "clipped to") -> dict:
    """``clipped_fraction`` overall and per feature for ``details``; warns naming the three
    features most often outside the range when the overall share is above :data:`CLIP_WARN`."""
    frac = float(outside.mean()) if outside.size else 0.0
    per = outside.mean(axis=0) if outside.size else np.zeros(len(labels))
    if frac > CLIP_WARN:
        worst = sorted(zip(per.tolist(), labels), reverse=True)[:3]
        warnings.warn(f"{family}: {100 * frac:.1f}% of feature values were {verb} model {model_name!r}'s "
                      f"training range (most: {', '.join(f'{n} {100 * v:.0f}%' for v, n in worst)})",
                      stacklevel=4)
    return {"clipped_fraction": frac, "clipped_fraction_per_feature": dict(zip(labels, per.tolist()))}


def _variant_of(signature: str) -> str:
    return signature.split("|", 1)[0]


def check_variants(family: str, model_name: str, trained: Mapping[str, str], now: Mapping[str, str]) -> None:
    """Warn when a feature's metric variant differs from the one the model was trained on."""
    changed = [f"{k} ({_variant_of(trained[k])} → {_variant_of(v)})" for k, v in now.items()
               if k in trained and _variant_of(trained[k]) != _variant_of(v)]
    if changed:
        warnings.warn(f"{family}: model {model_name!r} was trained on other metric variants: "
                      f"{', '.join(changed)}; its scores may be meaningless", stacklevel=4)
