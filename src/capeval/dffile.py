"""The CIDEr document-frequency file, ``capeval-cider-df/1``: JSON holding the df count of every
n-gram and the number of units they were counted over.

A format module, like :mod:`capeval.rowfiles`: reading checks every field and names what is
wrong; writing is atomic. ``capeval.metrics.cider.DocumentFrequency.load``/``save`` use it, so the
metric itself holds no file format.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

from .guards import read_json_file
from .errors import InputError
from .outputs import atomic_write

FORMAT = "capeval-cider-df/1"


def write_df_file(path: str | Path, df: Mapping[str, float], n_units: int) -> str:
    """Write the file; returns the sha256 of its bytes."""
    payload = {"format": FORMAT, "n_units": n_units, "df": dict(df)}
    data = json.dumps(payload, ensure_ascii=False, sort_keys=True).encode("utf-8")
    atomic_write(path, data)
    return hashlib.sha256(data).hexdigest()


def read_df_file(path: str | Path) -> tuple[dict[str, float], int, str]:
    """``(df, n_units, sha256 of the bytes)``; an :class:`InputError` names any bad field."""
    # The JSON door: a regular file, size, nesting depth and integers up to 2**53 (so n_units
    # and every df below are exact floats).
    payload, data = read_json_file(path, "CIDEr df file")
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        got = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
        raise InputError(f"CIDEr df file {path}: unknown format {got!r}")
    n_units, raw = payload.get("n_units"), payload.get("df")
    # rho = ln(n_units): 0 units gives -inf and NaN scores, 1 unit gives every score 0.
    # Above 2**53 a count is no longer an exact float, and ln() of it would be taken of a float.
    if isinstance(n_units, bool) or not isinstance(n_units, int) or not 2 <= n_units <= 2 ** 53:
        shown = repr(n_units) if not isinstance(n_units, int) or n_units < 10 ** 30 else f"an integer of {len(str(n_units))} digits"
        raise InputError(f"CIDEr df file {path}: n_units must be an integer >= 2 and <= 2**53 (ln of it "
                         f"weights every n-gram), got {shown}")
    if not isinstance(raw, dict):
        raise InputError(f"CIDEr df file {path}: 'df' must be an object mapping n-grams to counts")
    df: dict[str, float] = {}
    for k, v in raw.items():
        # A df counts the units whose references hold the n-gram: 0 <= df <= n_units.
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v <= n_units):
            raise InputError(f"CIDEr df file {path}: df of n-gram {k!r} is {v!r}; it must be a finite "
                             f"count between 0 and n_units ({n_units})")
        df[str(k)] = float(v)
    return df, n_units, hashlib.sha256(data).hexdigest()
