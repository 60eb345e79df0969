"""Input checks for the statistics: every bad value is reported with its index."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InputError


def as_vector(values: Sequence[float] | np.ndarray, what: str, *, finite: bool = True) -> np.ndarray:
    """Return a 1-D float array; raise :class:`InputError` naming the first bad index.

    NaN is always refused; so is ±inf unless ``finite=False``. No metric or rating is
    legitimately infinite, and rank statistics (Kendall, Spearman, bootstrap) would otherwise
    rank an overflow or a parsing accident first without a word."""
    try:
        # numpy would keep the real part, 1j becoming 0.0; a ragged input fails below, by name
        is_complex = np.iscomplexobj(values)
    except (TypeError, ValueError):
        is_complex = False
    if is_complex:
        flat = np.ravel(np.asarray(values))
        bad = np.flatnonzero(flat.imag != 0)
        i = int(bad[0]) if bad.size else 0
        raise InputError(f"{what}[{i}] is {complex(flat[i])!r}, a complex number; scores and ratings must be real")
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        for i, v in enumerate(values):
            try:
                float(v)
            except (TypeError, ValueError):
                raise InputError(f"{what}[{i}] is not a number: {v!r}") from None
        raise InputError(f"{what} cannot be read as numbers") from None
    if arr.ndim != 1:
        raise InputError(f"{what} must be one-dimensional, got shape {arr.shape}")
    nan = np.flatnonzero(np.isnan(arr))
    if nan.size:
        raise InputError(f"{what}[{int(nan[0])}] is NaN ({nan.size} NaN value(s) in all)")
    if finite:
        inf = np.flatnonzero(~np.isfinite(arr))
        if inf.size:
            raise InputError(f"{what}[{int(inf[0])}] is {float(arr[inf[0]])!r} ({inf.size} infinite value(s) in all); "
                             "statistics need finite values")
    return arr


def same_length(*named: tuple[str, np.ndarray]) -> int:
    lengths = {name: len(a) for name, a in named}
    if len(set(lengths.values())) != 1:
        desc = ", ".join(f"{k} has {v}" for k, v in lengths.items())
        raise InputError(f"inputs must align: {desc}")
    return next(iter(lengths.values()))
