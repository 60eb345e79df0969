"""A deliberately naive, loop-per-caption restatement of METHODS.md §1.2 (one list per
caption, one reduction call per list), used as the oracle for the vectorised engine."""
from __future__ import annotations

import numpy as np


def _geomean(xs):
    if np.all(xs):
        return 2 ** np.mean(np.log2(xs))
    return 0.0


def _filtered(cap, how):
    if how == "none":
        return [p for p, _ in cap]
    if how == "filter0":
        return [p for p, r in cap if r != 0]
    kept = []
    for p, r in cap:
        if r != 0:
            break
        kept.append(p)
    return kept


def _sentence(q, orig_len, how):
    if how == "prob":
        return np.prod(q) if q and np.all(q) else 0.0
    if how == "pplx":
        return 2 ** -np.mean(np.log2(q)) if q and np.all(q) else np.inf
    if how == "count":
        return len(q)
    return len(q) / float(orig_len)


_IMG = {
    "sum": np.sum, "mean": np.mean, "median": np.median, "geomean": _geomean,
    "max": np.max, "min": np.min,
}
_DS = dict(_IMG)


def reference_value(nested, name):
    d, i, s, f = name.split("_")
    per_img = [[_sentence(_filtered(cap, f), len(cap), s) for cap in img] for img in nested]
    if i == "join":
        values = [v for img in per_img for v in img]
    else:
        values = [_IMG[i](img) for img in per_img]
    with np.errstate(over="ignore"):
        return float(_DS[d](values))
