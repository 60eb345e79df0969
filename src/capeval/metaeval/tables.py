"""Bench results → JSON (the stable contract), a neutral table model, and renderers
(rich console, Markdown, LaTeX); the same for a combination search (``capeval combine``).
Every rendered table carries its signatures."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..stats.correlation import SHORT
from .combination import CombinationRun
from .runner import BenchResult

CONTRACT_STATISTICS = ("kendall_tau_c", "kendall_tau_b", "pearson", "spearman")
_LABELS = {"kendall_tau_c": "τc", "kendall_tau_b": "τb", "pearson": "Pearson r", "spearman": "Spearman ρ", "r2": "R²"}
_LATEX_LABELS = {"kendall_tau_c": r"$\tau_c$", "kendall_tau_b": r"$\tau_b$", "pearson": "Pearson $r$",
                 "spearman": r"Spearman $\rho$", "r2": "$R^2$"}


def _num(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


# ---- JSON ------------------------------------------------------------------------------

def to_json_dict(result: BenchResult) -> dict[str, Any]:
    """One benchmark in the contract shape plus ``_meta`` and ``_signatures``.

    correlation: ``{metric: {kendall_tau_c, kendall_tau_b, pearson, spearman, n}}`` (raw);
    pairwise: ``{metric: {<category>..., mean}}`` in percent;
    system: ``{metric: {"systems": {id: score}, "vs_human": {stat: value}}}``.
    """
    exp = result.experiment
    out: dict[str, Any] = {}
    meta: dict[str, Any] = {"benchmark": result.name, "kind": result.kind, "protocol": dict(result.protocol),
                            "seconds": round(result.seconds, 3), "cached": dict(result.cached)}
    if result.kind == "correlation":
        for m in result.metrics:
            cors = exp.results[m]
            entry = {s: _num(cors[s].value) for s in CONTRACT_STATISTICS}
            entry["n"] = cors[result.statistic].n  # fewer than exp.n when undefined rows were skipped
            out[m] = entry
        meta.update(n=exp.n, statistic=result.statistic,
                    headline={m: _num(exp.results[m][result.statistic].value) for m in result.metrics},
                    p_values={m: {s: _num(c.p_value) for s, c in exp.results[m].items()} for m in result.metrics})
    elif result.kind == "pairwise":
        for m in result.metrics:
            acc = exp.results[m]
            out[m] = {k: _num(v) for k, v in acc.percent().items()}
        meta.update(n=exp.n, categories=exp.categories, tie_policy=result.tie_policy, seed=result.seed,
                    ties={m: dict(exp.results[m].ties) for m in result.metrics},
                    overall={m: _num(100 * exp.results[m].overall) for m in result.metrics})
        if exp.defined:
            meta["defined_pairs"] = dict(exp.defined)
    else:
        for m in result.metrics:
            entry: dict[str, Any] = {"systems": {s: _num(v) for s, v in exp.scores[m].items()}}
            if m in exp.vs_human:
                entry["vs_human"] = {s: _num(c.value) for s, c in exp.vs_human[m].correlations.items()}
            out[m] = entry
        meta.update(systems=exp.systems, aggregate=exp.aggregate, rankings=exp.rankings)
        if exp.metric_matrix is not None:
            names, mat = exp.metric_matrix
            meta["metric_agreement"] = {"statistic": "kendall_tau_b", "metrics": names,
                                        "matrix": [[_num(v) for v in row] for row in mat]}
    if result.bootstrap:
        meta["bootstrap"] = {m: {"value": _num(ci.value), "low": _num(ci.low), "high": _num(ci.high),
                                 "level": ci.level, "resamples": ci.n_resamples, "seed": ci.seed,
                                 "statistic": ci.statistic}
                             for m, ci in result.bootstrap.items()}
    if result.seen:
        meta["seen"] = {m: list(r) for m, r in result.seen.items()}
    out["_meta"] = meta
    out["_signatures"] = {"benchmark": result.signature(), "metrics": dict(result.metric_signatures)}
    return out


def results_to_json(results: Sequence[BenchResult]) -> dict[str, Any]:
    """A single benchmark is written flat (the contract); several are keyed by name."""
    if len(results) == 1:
        return to_json_dict(results[0])
    return {r.name: to_json_dict(r) for r in results}


# ---- table model -----------------------------------------------------------------------

@dataclass
class BenchTable:
    title: str
    columns: list[str]
    rows: list[list[Any]]  # first cell is the row label; numbers stay numbers
    notes: list[str] = field(default_factory=list)  # signatures and protocol remarks
    scale: str = ""  # how numbers are scaled for display, e.g. "100 × coefficient"
    latex_columns: list[str] | None = None


def _row_label(result: BenchResult, metric: str) -> str:
    """A learned metric reported on data its model saw is marked in its row, not only in notes."""
    return f"{metric} (seen: {', '.join(result.seen[metric])})" if metric in result.seen else metric


def build_table(result: BenchResult) -> BenchTable:
    exp = result.experiment
    sig = result.signature()
    notes = [f"benchmark: {sig}"] + [f"{m}: {s}" for m, s in result.metric_signatures.items()]
    if result.kind == "correlation":
        stats = [result.statistic] + [s for s in CONTRACT_STATISTICS if s != result.statistic]
        rows = [[_row_label(result, m)] + [100 * exp.results[m][s].value for s in stats] for m in result.metrics]
        cols = ["metric"] + [_LABELS[s] for s in stats]
        latex = ["metric"] + [_LATEX_LABELS[s] for s in stats]
        if result.bootstrap:
            cols.append(f"{_LABELS[result.statistic]} {int(100 * next(iter(result.bootstrap.values())).level)}% CI")
            latex.append("CI")
            for row, m in zip(rows, result.metrics):
                ci = result.bootstrap[m]
                row.append(f"[{100 * ci.low:.2f}, {100 * ci.high:.2f}]")
        return BenchTable(f"{result.name} (n={exp.n}, headline {_LABELS[result.statistic]})", cols, rows,
                          notes, "100 × coefficient", latex)
    if result.kind == "pairwise":
        cats = exp.categories
        cols = ["metric"] + cats + ["mean", "ties"]
        rows = []
        for m in result.metrics:
            pct = exp.results[m].percent()
            rows.append([_row_label(result, m)] + [pct.get(c, math.nan) for c in cats] + [pct["mean"], exp.results[m].total_ties])
        if result.bootstrap:
            cols.append("mean 95% CI")
            for row, m in zip(rows, result.metrics):
                ci = result.bootstrap[m]
                row.append(f"[{100 * ci.low:.2f}, {100 * ci.high:.2f}]")
        return BenchTable(f"{result.name} (pairwise accuracy, {exp.n} pairs, ties: {result.tie_policy})",
                          cols, rows, notes, "percent")
    cols = ["system"] + list(result.metrics)
    rows = [[s] + [exp.scores[m][s] for m in result.metrics] for s in exp.systems]
    for m, sc in exp.vs_human.items():
        notes.append(f"{m} vs human: " + ", ".join(f"{k}={c.value:.3f}" for k, c in sc.correlations.items()))
    if exp.metric_matrix is not None:
        names, mat = exp.metric_matrix
        pairs = [f"{names[i]}/{names[j]} {mat[i, j]:.2f}" for i in range(len(names)) for j in range(i + 1, len(names))]
        notes.append("ranking agreement between metrics (Kendall τb over systems): " + "; ".join(pairs))
    return BenchTable(f"{result.name} (system level, {exp.aggregate} scores, {len(exp.systems)} systems)",
                      cols, rows, notes, "metric scale")


def _fmt(v: Any, digits: int) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return f"{v:.{digits}f}" if math.isfinite(v) else "nan"
    return str(v)


def _digits(result_kind: str) -> int:
    return {"correlation": 3, "pairwise": 2}.get(result_kind, 4)


# ---- renderers -------------------------------------------------------------------------

def to_markdown(results: Sequence[BenchResult], *, heading_level: int = 3) -> str:
    parts = []
    for r in results:
        t = build_table(r)
        d = _digits(r.kind)
        parts.append(f"{'#' * heading_level} {t.title}\n")
        parts.append(f"Values: {t.scale}.\n")
        parts.append("| " + " | ".join(t.columns) + " |")
        parts.append("|" + "|".join(["---"] + ["---:"] * (len(t.columns) - 1)) + "|")
        for row in t.rows:
            parts.append("| " + " | ".join(_fmt(v, d) for v in row) + " |")
        parts.append("")
        parts.extend(f"- `{n}`" for n in t.notes)
        parts.append("")
    return "\n".join(parts)


_LATEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"}


def _tex(s: str) -> str:
    return "".join(_LATEX_ESCAPES.get(c, c) for c in s)


def to_latex(results: Sequence[BenchResult]) -> str:
    parts = []
    for r in results:
        t = build_table(r)
        d = _digits(r.kind)
        cols = t.latex_columns or [_tex(c) for c in t.columns]
        parts.append("\\begin{table}[t]\n\\centering\n\\small")
        parts.append("\\begin{tabular}{l" + "r" * (len(cols) - 1) + "}\n\\toprule")
        parts.append(" & ".join(cols) + " \\\\\n\\midrule")
        for row in t.rows:
            parts.append(" & ".join(_tex(_fmt(v, d)) for v in row) + " \\\\")
        parts.append("\\bottomrule\n\\end{tabular}")
        notes = "; ".join(f"\\texttt{{{_tex(n)}}}" for n in t.notes)
        parts.append(f"\\caption{{{_tex(t.title)}. Values: {_tex(t.scale)}. {notes}}}")
        parts.append("\\end{table}\n")
    return "\n".join(parts)


def print_rich(results: Sequence[BenchResult], console=None) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Text objects, never markup: names, signatures and notes hold user text ("[b]x", ".[semantic]").
    console = console or Console()
    for r in results:
        t = build_table(r)
        d = _digits(r.kind)
        table = Table(title=Text(t.title), caption=Text(f"values: {t.scale}"), caption_justify="left")
        for i, c in enumerate(t.columns):
            table.add_column(Text(str(c)), justify="left" if i == 0 else "right")
        for row in t.rows:
            table.add_row(*(Text(_fmt(v, d)) for v in row))
        console.print(table)
        for n in t.notes:
            console.print(Text(f"  {n}", style="dim"), highlight=False, soft_wrap=True)
        console.print()


# ---- combination search (capeval combine) ------------------------------------------

def combination_to_json(run: CombinationRun) -> dict[str, Any]:
    def cand(c):
        w = c.williams
        return {"metrics": list(c.metrics), run.search.statistic: _num(c.value), "pearson": _num(c.pearson),
                "williams_vs_best_single": None if w is None else
                {"t": _num(w.t), "p": _num(w.p_value), "df": w.df, "r12": w.r12, "r13": w.r13, "r23": w.r23}}

    s = run.search
    return {"benchmark": run.name, "statistic": s.statistic, "normalisation": s.method, "n": s.n,
            "best_single": s.best_single, "singles": [cand(c) for c in s.singles],
            "combinations": [cand(c) for c in s.combinations],
            "_signatures": {"benchmark": run.signature(), "metrics": dict(run.metric_signatures)}}


def combination_markdown(run: CombinationRun, *, top: int = 10) -> str:
    s = run.search
    lines = [f"Best single metric: `{s.best_single}`. Williams test (one-sided, Pearson r, df {s.williams_df}) of each "
             f"row against it.\n",
             f"| metrics | 100 × {SHORT[s.statistic]} | 100 × Pearson r | Williams t | p |",
             "|---|---:|---:|---:|---:|"]
    for c in list(s.singles) + list(s.combinations[:top]):
        w = c.williams
        lines.append(f"| {c.name} | {100 * c.value:.3f} | {100 * c.pearson:.3f} | "
                     f"{'—' if w is None else f'{w.t:.3f}'} | {'—' if w is None else f'{w.p_value:.3g}'} |")
    lines.append("")
    lines.append(f"- `benchmark: {run.signature()}`")
    lines.extend(f"- `{m}: {sig}`" for m, sig in run.metric_signatures.items())
    return "\n".join(lines) + "\n"
