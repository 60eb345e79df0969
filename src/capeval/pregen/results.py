"""The pre-gen results table (one row per model × stratum), as in the reference ``data.txt``.

Layout (TAB-separated, header line): the key columns ``dataset architecture run num_strata
stratum``, then the post-gen metric columns, then the pre-gen columns. Infinite values are
written as the literal ``inf``.
"""
from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError
from .tiers import parse_name

KEY_COLUMNS = ("dataset", "architecture", "run", "num_strata", "stratum")


def _is_pregen(name: str) -> bool:
    try:
        parse_name(name)
    except InputError:
        return False
    return True


@dataclass
class ResultsTable:
    """Rows of (key, post-gen values, pre-gen values); columns keep their file order."""

    keys: list[dict[str, str]]
    postgen: dict[str, np.ndarray]
    pregen: dict[str, np.ndarray]
    source: str = field(default="")

    def __len__(self) -> int:
        return len(self.keys)

    def datasets(self) -> list[str]:
        """Distinct dataset names in order of first appearance."""
        return list(dict.fromkeys(k["dataset"] for k in self.keys))

    def group_mask(self, group: str) -> np.ndarray:
        if group == "all":
            return np.ones(len(self), dtype=bool)
        mask = np.array([k["dataset"] == group for k in self.keys], dtype=bool)
        if not mask.any():
            raise InputError(f"no rows for dataset {group!r}; datasets present: {self.datasets()}")
        return mask

    @classmethod
    def from_rows(
        cls, rows: Sequence[dict[str, object]], postgen: Sequence[str], pregen: Sequence[str]
    ) -> "ResultsTable":
        keys = [{k: str(r[k]) for k in KEY_COLUMNS} for r in rows]
        post = {m: np.array([float(r[m]) for r in rows]) for m in postgen}
        pre = {m: np.array([float(r[m]) for r in rows]) for m in pregen}
        return cls(keys, post, pre)


def _parse_float(text: str, where: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{where}: {text!r} is not a number") from None


def read_results(path: str | Path) -> ResultsTable:
    """Read a ``data.txt``-style file; pre-gen columns are recognised by their names."""
    import contextlib
    import os

    from ..guards import MAX_TABLE_BYTES, text_lines

    path = Path(path)
    if not os.path.lexists(path):
        raise InputError(f"{path}: no such file")
    # The file door: a regular file, bounded size and lines, UTF-8 errors named.
    with contextlib.closing(text_lines(path, "results table", MAX_TABLE_BYTES, newline="")) as f:
        reader = csv.reader(f, delimiter="\t")
        try:
            header = next(reader)
        except StopIteration:
            raise InputError(f"{path}: empty file") from None
        missing = [k for k in KEY_COLUMNS if k not in header]
        if missing:
            raise InputError(f"{path}: header lacks key column(s) {', '.join(missing)}")
        value_cols = [c for c in header if c not in KEY_COLUMNS]
        pregen = [c for c in value_cols if _is_pregen(c)]
        postgen = [c for c in value_cols if not _is_pregen(c)]
        index = {c: i for i, c in enumerate(header)}
        keys: list[dict[str, str]] = []
        values: list[list[float]] = []
        for lineno, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != len(header):
                raise InputError(f"{path}:{lineno}: {len(row)} fields, header has {len(header)}")
            keys.append({k: row[index[k]] for k in KEY_COLUMNS})
            values.append(
                [_parse_float(row[index[c]], f"{path}:{lineno} column {c}") for c in value_cols]
            )
    if not keys:
        raise InputError(f"{path}: no data rows")
    arr = np.array(values, dtype=np.float64)
    cols = {c: arr[:, j] for j, c in enumerate(value_cols)}
    return ResultsTable(
        keys, {c: cols[c] for c in postgen}, {c: cols[c] for c in pregen}, source=str(path)
    )


def format_value(x: float) -> str:
    """Shortest round-trip text, ``inf`` literally, as the reference's ``print`` wrote it."""
    x = float(x)
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x)


def write_results(path: str | Path, table: ResultsTable) -> None:
    path = Path(path)
    header = list(KEY_COLUMNS) + list(table.postgen) + list(table.pregen)
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(header)
        for i, key in enumerate(table.keys):
            w.writerow(
                [key[k] for k in KEY_COLUMNS]
                + [format_value(v[i]) for v in table.postgen.values()]
                + [format_value(v[i]) for v in table.pregen.values()]
            )
