"""Figures for the HTML report, as inline SVG strings (matplotlib, imported lazily).

Each function takes plain numbers and returns one ``<svg>`` element: no files, no pyplot
global state (figures are built with ``matplotlib.figure.Figure`` directly), and no
timestamps, so the same input gives byte-identical SVG.
"""
from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import ResourceNotFound

MAX_RATING_LEVELS = 10  # more distinct human ratings than this are binned
RATING_BINS = 5
_XML_PROLOGUE = re.compile(r"^.*?(?=<svg\b)", re.S)
# matplotlib's RDF block names its home page; a self-contained page carries no URLs.
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)


def _figure(width: float, height: float):
    try:
        from matplotlib.figure import Figure
    except ImportError:
        from ..extras import install_hint

        raise ResourceNotFound(f"figures need matplotlib: pip install matplotlib, or the report extra: "
                               f"{install_hint(['report'])}") from None
    return Figure(figsize=(width, height), layout="constrained")


def to_svg(fig, salt: str) -> str:
    """The figure as an inline ``<svg>`` element. ``salt`` makes the element ids matplotlib
    derives from content unique per figure, so several SVGs can share one page."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": salt, "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = _METADATA.sub("", _XML_PROLOGUE.sub("", buf.getvalue(), count=1), count=1)
    return svg.strip()


def rating_levels(human: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Level labels and each row's level index: the distinct ratings when there are few
    (Expert 1–4, COMPOSITE 1–5), else ``RATING_BINS`` equal-width bins (CF's fractions)."""
    human = np.asarray(human, dtype=float)
    values = np.unique(human)
    if len(values) <= MAX_RATING_LEVELS:
        return [f"{v:g}" for v in values], np.searchsorted(values, human)
    edges = np.linspace(values[0], values[-1], RATING_BINS + 1)
    idx = np.clip(np.searchsorted(edges, human, side="right") - 1, 0, RATING_BINS - 1)
    labels = [f"[{edges[i]:.2g}, {edges[i + 1]:.2g}{']' if i == RATING_BINS - 1 else ')'}"
              for i in range(RATING_BINS)]
    return labels, idx


def rating_distributions(scores: Mapping[str, Sequence[float]], human: Sequence[float], *, salt: str,
                         rating_name: str = "human rating") -> str:
    """One box plot panel per metric: the metric's scores grouped by human rating level.

    Whiskers span the 5th–95th percentiles and outliers are not drawn (a point per row would
    make the SVG megabytes on 47k-row tables); the dot is the mean, the label the row count.
    """
    labels, idx = rating_levels(np.asarray(human, dtype=float))
    names = list(scores)
    ncols = min(4, len(names))
    nrows = math.ceil(len(names) / ncols)
    fig = _figure(2.7 * ncols, 2.3 * nrows + 0.3)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    counts = np.bincount(idx, minlength=len(labels))
    for k, ax in enumerate(axes.flat):
        if k >= len(names):
            ax.set_visible(False)
            continue
        values = np.asarray(scores[names[k]], dtype=float)
        ok = np.isfinite(values)  # e.g. SPICE sub-scores are NaN where references lack the tuple type
        groups = [values[(idx == i) & ok] for i in range(len(labels))]
        present = [i for i, g in enumerate(groups) if len(g)]
        ax.boxplot([groups[i] for i in present], positions=present, whis=(5, 95), showfliers=False,
                   widths=0.6, patch_artist=True, boxprops={"facecolor": "#cfe0f3", "edgecolor": "#3b6ea5"},
                   medianprops={"color": "#c0392b"})
        ax.plot(present, [groups[i].mean() for i in present], "o", color="#222", markersize=3)
        ax.set_xticks(range(len(labels)), [f"{lab}\nn={counts[i]}" for i, lab in enumerate(labels)], fontsize=6)
        ax.set_title(names[k], fontsize=9)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="y", alpha=0.3)
    fig.supxlabel(rating_name, fontsize=8)
    return to_svg(fig, salt)


def heatmap(names_rows: Sequence[str], names_cols: Sequence[str], matrix, *, salt: str, title: str = "",
            vmin: float = -1.0, vmax: float = 1.0, cmap: str = "RdBu_r", fmt: str = "{:.2f}",
            colorbar: str = "") -> str:
    """Annotated matrix (NaN cells are blank and marked "n/a")."""
    m = np.asarray(matrix, dtype=float)
    fig = _figure(1.2 + 0.62 * len(names_cols), 0.9 + 0.42 * len(names_rows))
    ax = fig.add_subplot()
    im = ax.imshow(np.ma.masked_invalid(m), vmin=vmin, vmax=vmax, cmap=cmap, aspect="auto")
    ax.set_xticks(range(len(names_cols)), names_cols, rotation=40, ha="right", fontsize=7)
    ax.set_yticks(range(len(names_rows)), names_rows, fontsize=7)
    mid = (vmin + vmax) / 2
    span = (vmax - vmin) / 2 or 1.0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            v = m[i, j]
            text = "n/a" if not np.isfinite(v) else fmt.format(v)
            dark = np.isfinite(v) and abs(v - mid) / span > 0.6
            ax.text(j, i, text, ha="center", va="center", fontsize=6.5, color="white" if dark else "black")
    if title:
        ax.set_title(title, fontsize=9)
    cb = fig.colorbar(im, ax=ax, shrink=0.8)
    cb.ax.tick_params(labelsize=7)
    if colorbar:
        cb.set_label(colorbar, fontsize=7)
    return to_svg(fig, salt)


# p-value bands of the Williams matrix: darker = stronger evidence that row beats column.
P_BANDS = (0.001, 0.01, 0.05)


def significance_matrix(names: Sequence[str], p_values, *, salt: str, title: str = "") -> str:
    """Cell (i, j): one-sided p that metric i correlates better with humans than metric j."""
    from matplotlib.colors import BoundaryNorm, ListedColormap

    p = np.asarray(p_values, dtype=float)
    n = len(names)
    fig = _figure(1.6 + 0.62 * n, 1.0 + 0.45 * n)
    ax = fig.add_subplot()
    cmap = ListedColormap(["#1a7f37", "#4cae4f", "#a6d96a", "#f4f4f4"])
    norm = BoundaryNorm([0.0, *P_BANDS, 1.0], cmap.N)
    im = ax.imshow(np.ma.masked_invalid(p), cmap=cmap, norm=norm, aspect="auto")
    ax.set_xticks(range(n), names, rotation=40, ha="right", fontsize=7)
    ax.set_yticks(range(n), names, fontsize=7)
    ax.set_xlabel("metric B", fontsize=8)
    ax.set_ylabel("metric A (tested: A > B)", fontsize=8)
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            v = p[i, j]
            text = "n/a" if not np.isfinite(v) else ("<.001" if v < 0.001 else f"{v:.3f}".lstrip("0"))
            ax.text(j, i, text, ha="center", va="center", fontsize=6.5,
                    color="white" if np.isfinite(v) and v < P_BANDS[1] else "black")
    if title:
        ax.set_title(title, fontsize=9)
    cb = fig.colorbar(im, ax=ax, shrink=0.8, ticks=[0.0, *P_BANDS, 1.0])
    cb.ax.tick_params(labelsize=7)
    cb.set_label("one-sided p", fontsize=7)
    return to_svg(fig, salt)


def accuracy_bars(categories: Sequence[str], accuracy: Mapping[str, Mapping[str, float]], *, salt: str,
                  title: str = "", chance: float | None = 50.0) -> str:
    """Grouped bars: one group per category, one bar per metric, accuracy in percent."""
    metrics = list(accuracy)
    cats = list(categories)
    fig = _figure(max(4.0, 1.0 + 0.25 * len(cats) * max(1, len(metrics)) + 0.4 * len(cats)), 3.0)
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(metrics))
    x = np.arange(len(cats))
    cmap = _qualitative(len(metrics))
    for k, m in enumerate(metrics):
        vals = [accuracy[m].get(c, float("nan")) for c in cats]
        ax.bar(x - 0.4 + width * (k + 0.5), vals, width, label=m, color=cmap[k])
    if chance is not None:
        ax.axhline(chance, color="#555", linestyle="--", linewidth=0.8)
    ax.set_xticks(x, cats, fontsize=7, rotation=20 if len(cats) > 5 else 0)
    ax.set_ylim(0, 100)
    ax.set_ylabel("accuracy (%)", fontsize=8)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=6.5, ncols=min(len(metrics), 6), loc="lower center", bbox_to_anchor=(0.5, 1.0),
              frameon=False)
    if title:
        fig.suptitle(title, fontsize=9)
    return to_svg(fig, salt)


def _qualitative(n: int) -> list:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]
