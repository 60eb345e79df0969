"""R² of every pre-gen column against each post-gen metric (docs/PREGEN.md, Exactness).

Per post-gen metric, per group (each dataset, then ``all`` rows), per pre-gen column:
(R, p) = Pearson's r with its two-sided p-value, reported as R², R, p. A column is dropped
from every table if, in *any* group, it holds an infinity or has zero range, because Pearson's
r is undefined there; the reference applies the same rule, which leaves 361 of 504 columns.
"""
from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..signature import Signature
from .results import ResultsTable, format_value

# The reference's group order; datasets not named here follow in order of appearance.
REFERENCE_GROUP_ORDER = ("mscoco", "flickr30k", "flickr8k")
MEASURES = ("R^2", "R", "p")


def default_groups(table: ResultsTable) -> list[str]:
    present = table.datasets()
    known = [d for d in REFERENCE_GROUP_ORDER if d in present]
    return known + [d for d in present if d not in known] + ["all"]


@dataclass(frozen=True)
class Correlation:
    r2: float
    r: float
    p: float


@dataclass
class CorrelationTable:
    """Surviving pre-gen columns (file order) → group → Correlation, for one post-gen metric."""

    postgen: str
    groups: list[str]
    rows: dict[str, dict[str, Correlation]]
    dropped: list[str]
    n_rows: dict[str, int]

    def signature(self) -> str:
        return str(
            Signature.make(
                "pregen_r2",
                postgen=self.postgen,
                stat="pearson",
                groups="+".join(f"{g}:{self.n_rows[g]}" for g in self.groups),
                drop="inf-or-constant-in-any-group",
                kept=len(self.rows),
            )
        )

    def top(self, k: int = 5, group: str = "all") -> list[tuple[str, Correlation]]:
        """The k columns with the highest R² in ``group`` (ties keep file order)."""
        if group not in self.groups:
            raise InputError(f"unknown group {group!r}; groups: {self.groups}")
        ranked = sorted(self.rows.items(), key=lambda kv: -kv[1][group].r2)
        return [(name, cols[group]) for name, cols in ranked[:k]]


def dropped_columns(table: ResultsTable, groups: Sequence[str]) -> list[str]:
    """Pre-gen columns with an inf, or zero range, in any group."""
    masks = [table.group_mask(g) for g in groups]
    out = []
    for name, col in table.pregen.items():
        for m in masks:
            x = col[m]
            if np.any(np.isinf(x)) or np.max(x) - np.min(x) == 0.0:
                out.append(name)
                break
    return out


def correlate(
    table: ResultsTable, postgen: str, groups: Sequence[str] | None = None
) -> CorrelationTable:
    from scipy.stats import pearsonr

    if postgen not in table.postgen:
        raise InputError(
            f"post-gen metric {postgen!r} not in the table; available: {list(table.postgen)}"
        )
    groups = list(groups) if groups is not None else default_groups(table)
    masks = {g: table.group_mask(g) for g in groups}
    for g, m in masks.items():
        if m.sum() < 3:
            raise InputError(f"group {g!r} has {int(m.sum())} rows; Pearson's r needs at least 3")
    y = table.postgen[postgen]
    for g, m in masks.items():
        if not np.all(np.isfinite(y[m])):
            raise InputError(f"post-gen column {postgen!r} has non-finite values in group {g!r}")
    dropped = set(dropped_columns(table, groups))
    rows: dict[str, dict[str, Correlation]] = {}
    for name, col in table.pregen.items():
        if name in dropped:
            continue
        cells = {}
        for g, m in masks.items():
            r, p = pearsonr(y[m], col[m])
            r = float(r)
            cells[g] = Correlation(r**2, r, float(p))
        rows[name] = cells
    return CorrelationTable(
        postgen=postgen,
        groups=groups,
        rows=rows,
        dropped=[n for n in table.pregen if n in dropped],
        n_rows={g: int(m.sum()) for g, m in masks.items()},
    )


def write_correlations(path: str | Path, corr: CorrelationTable) -> None:
    """``correlations_<metric>.txt`` layout: pregen, then {group}_{R^2,R,p}."""
    from ..outputs import atomic_open

    with atomic_open(path, "w", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["pregen"] + [f"{g}_{m}" for g in corr.groups for m in MEASURES])
        for name, cells in corr.rows.items():
            row = [name]
            for g in corr.groups:
                c = cells[g]
                row += [format_value(c.r2), format_value(c.r), format_value(c.p)]
            w.writerow(row)


def read_correlations(path: str | Path) -> tuple[list[str], dict[str, dict[str, Correlation]]]:
    """Read a correlations file back: (groups, rows)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t")
        header = next(reader)
        if not header or header[0] != "pregen" or (len(header) - 1) % 3:
            raise InputError(f"{path}: not a correlations file (header {header[:4]}...)")
        groups = [h[: -len("_R^2")] for h in header[1::3]]
        rows: dict[str, dict[str, Correlation]] = {}
        for lineno, row in enumerate(reader, start=2):
            if len(row) != len(header):
                raise InputError(f"{path}:{lineno}: {len(row)} fields, header has {len(header)}")
            vals = [float(v) for v in row[1:]]
            rows[row[0]] = {
                g: Correlation(*vals[3 * i : 3 * i + 3]) for i, g in enumerate(groups)
            }
    return groups, rows


def scatter_plot(
    table: ResultsTable, pregen: str, postgen: str, path: str | Path, groups: Sequence[str] | None = None
) -> Path:
    """One scatter of a pre-gen column against a post-gen metric, coloured by dataset.

    Needs matplotlib (the ``report`` extra).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from ..extras import install_hint

        raise InputError(f"scatter plots need matplotlib: pip install matplotlib, or the report extra: "
                         f"{install_hint(['report'])}") from None
    if pregen not in table.pregen:
        raise InputError(f"pre-gen column {pregen!r} not in the table")
    if postgen not in table.postgen:
        raise InputError(f"post-gen metric {postgen!r} not in the table")
    groups = [g for g in (groups or default_groups(table)) if g != "all"]
    fig, ax = plt.subplots(figsize=(5, 4))
    for g in groups:
        m = table.group_mask(g)
        ax.scatter(table.pregen[pregen][m], table.postgen[postgen][m], s=8, label=g)
    ax.set_xlabel(pregen)
    ax.set_ylabel(postgen)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    from ..outputs import atomic_path

    try:
        with atomic_path(path) as tmp:  # the temporary keeps the suffix that picks the format
            fig.savefig(tmp, dpi=120)
    finally:
        plt.close(fig)
    return path
