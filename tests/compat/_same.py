"""``assert_same``: equal values *and* the same Python/numpy types and shapes, recursively."""
from __future__ import annotations

import math

import numpy as np


def assert_same(ours, ref, where: str = "out") -> None:
    assert type(ours) is type(ref), f"{where}: type {type(ours).__name__} != {type(ref).__name__}"
    if isinstance(ref, np.ndarray):
        assert ours.dtype == ref.dtype and ours.shape == ref.shape, \
            f"{where}: {ours.dtype}{ours.shape} != {ref.dtype}{ref.shape}"
        bad = np.flatnonzero(~((ours == ref) | (np.isnan(ours) & np.isnan(ref))))
        assert not len(bad), f"{where}[{bad[0]}]: {ours[bad[0]]!r} != {ref[bad[0]]!r} ({len(bad)} differ)"
    elif isinstance(ref, dict):
        assert list(ours) == list(ref), f"{where}: keys {list(ours)[:8]} != {list(ref)[:8]}"
        for k in ref:
            assert_same(ours[k], ref[k], f"{where}[{k!r}]")
    elif isinstance(ref, (list, tuple)):
        assert len(ours) == len(ref), f"{where}: length {len(ours)} != {len(ref)}"
        for i, (a, b) in enumerate(zip(ours, ref)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(ref, (float, np.floating)):
        assert ours == ref or (math.isnan(ours) and math.isnan(ref)), f"{where}: {ours!r} != {ref!r}"
    else:
        assert ours == ref, f"{where}: {ours!r} != {ref!r}"
