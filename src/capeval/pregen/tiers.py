"""The four-tier pre-gen engine (Tanti, Gatt & Muscat 2018; docs/PREGEN.md, The four tiers).

filter → sentence score → image aggregation → dataset aggregation, 3 × 4 × 7 × 6 = 504
values. Everything is computed on whole arrays, but each reduction is applied to exactly the
values, in exactly the order, the reference code reduces (rows of equal length are stacked
and reduced along their last axis, which runs numpy's own 1-D reduction on every row), so the
results are bit-identical to the reference's nested loops rather than merely close.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from ..errors import InputError
from .tokens import TokenScores

FILTERS = ("none", "filter0", "prefix0")
SENTENCE_SCORES = ("prob", "pplx", "count", "normcount")
IMAGE_AGGREGATIONS = ("sum", "mean", "median", "geomean", "max", "min", "join")
DATASET_AGGREGATIONS = ("sum", "mean", "median", "geomean", "max", "min")

BEST = "mean_max_normcount_prefix0"


def column_names() -> list[str]:
    """All 504 names in the reference file's order (dataset aggregation outermost)."""
    return [
        f"{d}_{i}_{s}_{f}"
        for d in DATASET_AGGREGATIONS
        for i in IMAGE_AGGREGATIONS
        for s in SENTENCE_SCORES
        for f in FILTERS
    ]


def parse_name(name: str) -> tuple[str, str, str, str]:
    """``mean_max_normcount_prefix0`` → ("mean", "max", "normcount", "prefix0")."""
    parts = name.split("_")
    if (
        len(parts) != 4
        or parts[0] not in DATASET_AGGREGATIONS
        or parts[1] not in IMAGE_AGGREGATIONS
        or parts[2] not in SENTENCE_SCORES
        or parts[3] not in FILTERS
    ):
        raise InputError(
            f"unknown pre-gen metric {name!r}: expected <dataset>_<image>_<sentence>_<filter> with "
            f"dataset in {DATASET_AGGREGATIONS}, image in {IMAGE_AGGREGATIONS}, "
            f"sentence in {SENTENCE_SCORES}, filter in {FILTERS}"
        )
    return parts[0], parts[1], parts[2], parts[3]


# -- tier 1: filters (token masks) ---------------------------------------------------
def _filter_masks(ts: TokenScores) -> dict[str, np.ndarray]:
    starts = ts.caption_starts()
    lens = ts.caption_lengths
    pos = np.arange(ts.probs.size, dtype=np.int64) - np.repeat(starts, lens)
    missed = ts.ranks != 0
    # First non-argmax position of each caption (its length when there is none): prefix0
    # keeps the positions before it, so it is empty when the first word is already missed.
    first_miss = np.minimum.reduceat(np.where(missed, pos, np.iinfo(np.int64).max), starts)
    first_miss = np.minimum(first_miss, lens)
    return {
        "none": np.ones(ts.probs.size, dtype=bool),
        "filter0": missed,
        "prefix0": pos < np.repeat(first_miss, lens),
    }


# -- tier 2: sentence scores ---------------------------------------------------------
def _rows_by_length(values: np.ndarray, counts: np.ndarray):
    """Yield (caption indices, 2-D block) for every non-zero kept length: the kept values of
    the captions with that length, one caption per row, in their original order."""
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1]))
    for k in np.unique(counts):
        if k == 0:
            continue
        caps = np.flatnonzero(counts == k)
        block = values[offsets[caps][:, None] + np.arange(k)]
        yield caps, block


def _sentence_scores(ts: TokenScores, mask: np.ndarray) -> dict[str, np.ndarray]:
    cap_of_token = np.repeat(np.arange(ts.n_captions), ts.caption_lengths)
    counts = np.bincount(cap_of_token[mask], minlength=ts.n_captions).astype(np.int64)
    kept = ts.probs[mask]
    # Empty filtered lists and lists containing a zero probability score 0.0 (prob) and
    # +inf (pplx), as the reference defines them, so no log of 0 is ever taken.
    prob = np.zeros(ts.n_captions)
    pplx = np.full(ts.n_captions, np.inf)
    for caps, block in _rows_by_length(kept, counts):
        ok = np.all(block != 0.0, axis=1)
        if not ok.any():
            continue
        good = block[ok]
        prob[caps[ok]] = np.prod(good, axis=1)
        pplx[caps[ok]] = _pow2(-np.mean(np.log2(good), axis=1))
    return {
        "prob": prob,
        "pplx": pplx,
        "count": counts.astype(np.float64),
        "normcount": counts / ts.caption_lengths.astype(np.float64),
    }


def _pow2(x: np.ndarray) -> np.ndarray:
    # The reference computes ``2**x`` on numpy scalars, which calls C pow() per element;
    # the vectorised ufunc takes a SIMD path that differs in the last bit for ~5% of inputs.
    with np.errstate(over="ignore"):
        return np.fromiter((2**v for v in x), dtype=np.float64, count=x.size)


# -- tiers 3 and 4: aggregations -----------------------------------------------------
def geomean(xs: np.ndarray) -> float:
    """2^mean(log2 x); 0.0 if any element is 0 (never NaN), inf if one is inf."""
    xs = np.asarray(xs, dtype=np.float64)
    if np.all(xs):
        return float(2 ** np.mean(np.log2(xs)))
    return 0.0


def _geomean_rows(block: np.ndarray) -> np.ndarray:
    out = np.zeros(block.shape[0])
    ok = np.all(block != 0.0, axis=1)
    if ok.any():
        out[ok] = _pow2(np.mean(np.log2(block[ok]), axis=1))
    return out


_ROW_REDUCERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sum": lambda b: np.sum(b, axis=1),
    "mean": lambda b: np.mean(b, axis=1),
    "median": lambda b: np.median(b, axis=1),
    "geomean": _geomean_rows,
    "max": lambda b: np.max(b, axis=1),
    "min": lambda b: np.min(b, axis=1),
}

_DATASET_REDUCERS: dict[str, Callable[[np.ndarray], float]] = {
    "sum": lambda x: float(np.sum(x)),
    "mean": lambda x: float(np.mean(x)),
    "median": lambda x: float(np.median(x)),
    "geomean": geomean,
    "max": lambda x: float(np.max(x)),
    "min": lambda x: float(np.min(x)),
}


def _image_values(ts: TokenScores, caption_values: np.ndarray, how: str) -> np.ndarray:
    if how == "join":
        return caption_values
    reduce = _ROW_REDUCERS[how]
    out = np.empty(ts.n_images)
    for caps_idx, block in _rows_by_length(caption_values, ts.captions_per_image):
        out[caps_idx] = reduce(block)
    return out


# -- public --------------------------------------------------------------------------
def caption_scores(ts: TokenScores) -> dict[tuple[str, str], np.ndarray]:
    """Per-caption values of every (sentence score, filter) pair."""
    out: dict[tuple[str, str], np.ndarray] = {}
    for f, mask in _filter_masks(ts).items():
        for s, values in _sentence_scores(ts, mask).items():
            out[(s, f)] = values
    return out


def compute(ts: TokenScores, names: Iterable[str] | None = None) -> dict[str, float]:
    """Pre-gen values by name (all 504, in the reference order, when ``names`` is None)."""
    wanted = column_names() if names is None else list(names)
    parsed = [parse_name(n) for n in wanted]
    caps = caption_scores(ts)
    image_cache: dict[tuple[str, str, str], np.ndarray] = {}
    out: dict[str, float] = {}
    # Sums of huge perplexities may overflow to inf, which is the reference's value too.
    with np.errstate(over="ignore"):
        for name, (d, i, s, f) in zip(wanted, parsed):
            key = (i, s, f)
            if key not in image_cache:
                image_cache[key] = _image_values(ts, caps[(s, f)], i)
            out[name] = _DATASET_REDUCERS[d](image_cache[key])
    return out
