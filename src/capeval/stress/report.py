"""The stress results as a terminal table, Markdown, and a self-contained HTML page with a
metric x perturbation heatmap of accuracy (inline CSS only: no scripts, no external URLs)."""
from __future__ import annotations

import html
import math
from pathlib import Path

from .perturbations import BY_NAME
from .stats import SAME_FRACTION, TIE_TOL, Cell
from .suite import StressResult

_EXPECT = {"lower": "lower", "same": "same", "not_higher": "not higher"}


def _pct(x: float) -> str:
    return f"{100 * x:.0f}" if math.isfinite(x) else "–"


def _g(x: float) -> str:
    return f"{x:+.3g}" if math.isfinite(x) else "–"


def cell_text(c: Cell) -> str:
    """Accuracy (%) of one cell, with the tie rate when the metric did not move on some items."""
    if c.n == 0:
        return "–"
    return _pct(c.accuracy) + (f" ({_pct(c.tie_rate)}t)" if c.tie_rate >= 0.005 else "")


def legend(res: StressResult) -> str:
    return (f"Accuracy (%): share of applicable items where the metric moved as expected (lower: scored worse "
            f"by > {TIE_TOL:g}; not higher: not better by > {TIE_TOL:g}; same: within {SAME_FRACTION:g} x the sd "
            f"of the metric's control scores). (Nt): N% of the items tied with the control (|change| <= "
            f"{TIE_TOL:g}). n: applicable items out of {len(res.items)}.")


def to_markdown(res: StressResult, *, details: bool = True) -> str:
    perts = res.perturbations
    lines = ["| perturbation | expected | n | " + " | ".join(res.metrics) + " |",
             "|---|---|---:|" + "---:|" * len(res.metrics)]
    for p in perts:
        n = len(res.items) - next(iter(res.results.values()))[p].skipped if res.results else 0
        row = [p, _EXPECT[BY_NAME[p].expected], str(n)]
        row += [cell_text(res.results[m][p]) for m in res.metrics]
        lines.append("| " + " | ".join(_md(x) for x in row) + " |")
    out = [f"Signature: `{res.signature}`", "", legend(res), "", *lines]
    if details:
        out += ["", "Mean change (perturbed − control) with its bootstrap 95% CI:", "",
                "| metric | perturbation | n | accuracy | tie rate | mean Δ | 95% CI | median Δ |",
                "|---|---|---:|---:|---:|---:|---|---:|"]
        for m in res.metrics:
            for p in perts:
                c = res.results[m][p]
                out.append(f"| {_md(m)} | {p} | {c.n} | {_pct(c.accuracy)} | {_pct(c.tie_rate)} | {_g(c.mean_delta)} "
                           f"| [{_g(c.ci[0])}, {_g(c.ci[1])}] | {_g(c.median_delta)} |")
        out += ["", "Metric signatures:", ""] + [f"- `{_md(m)}`: `{res.metric_signatures.get(m, '')}`"
                                                 for m in res.metrics]
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def print_rich(res: StressResult, console, *, notes: bool = True) -> None:
    """The accuracy table at ``console``'s width: metric columns that do not fit beside the
    others go to a further table (the perturbation columns repeated), so no cell is cut and no
    line is wider than the terminal; then the legend (wrapped by Rich) and the signature (one
    line, copied whole)."""
    from rich.table import Table
    from rich.text import Text

    groups = _fitting_groups(res, console.width)
    if len(groups) > 1:
        import dataclasses

        for group in groups:
            print_rich(dataclasses.replace(res, metrics=group), console, notes=False)
        _print_notes(res, console)
        return
    table = Table(title=Text(f"stress: {res.source}, {len(res.items)} items"), title_justify="left")
    table.add_column("perturbation", no_wrap=True)
    table.add_column("expected", no_wrap=True)
    table.add_column("n", justify="right")
    for m in res.metrics:
        table.add_column(Text(m), justify="right")  # a user's column name is never read as markup
    for p in res.perturbations:
        n = len(res.items) - next(iter(res.results.values()))[p].skipped if res.results else 0
        cells = []
        for m in res.metrics:
            c = res.results[m][p]
            style = "" if c.n == 0 or not math.isfinite(c.accuracy) else (
                "green" if c.accuracy >= 0.9 else "yellow" if c.accuracy >= 0.6 else "red")
            cells.append(Text(cell_text(c), style=style))
        table.add_row(Text(p), Text(_EXPECT[BY_NAME[p].expected]), Text(str(n)), *cells)
    console.print(table)
    if notes:
        _print_notes(res, console)


def _print_notes(res: StressResult, console) -> None:
    from rich.text import Text

    console.print(Text(legend(res), style="dim"))
    console.print(Text(res.signature, style="dim"), soft_wrap=True)


def _fitting_groups(res: StressResult, width: int) -> list[list[str]]:
    """``res.metrics`` in runs whose table (heavy box: a border and one space of padding each
    side per column) is at most ``width`` wide beside the perturbation, expected and n columns;
    at least one metric per table."""
    def column(cells) -> int:
        return max(map(len, cells)) + 3

    fixed = 1 + column(["perturbation", *res.perturbations]) + column(["expected", *_EXPECT.values()]) \
        + column(["n", str(len(res.items))])
    groups: list[list[str]] = [[]]
    used = fixed
    for m in res.metrics:
        w = column([m, *(cell_text(res.results[m][p]) for p in res.perturbations)])
        if groups[-1] and used + w > width:
            groups.append([])
            used = fixed
        groups[-1].append(m)
        used += w
    return groups


# ---- HTML ----------------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0 auto;
max-width:1180px;padding:1.2rem 1.6rem;color:#1d1d1f;line-height:1.4}
h1{font-size:1.5rem}h2{font-size:1.2rem;border-bottom:1px solid #ddd;margin-top:2rem}
table{border-collapse:collapse;font-size:.84rem;margin:.4rem 0}
th,td{padding:.22rem .5rem;border:1px solid #e3e3e3;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}thead th{background:#f6f6f6}
.sig{font-size:.74rem;color:#555}.sig code{display:block;overflow-wrap:anywhere;white-space:pre-wrap}
.meta{color:#555;font-size:.85rem}
"""


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _colour(acc: float) -> str:
    """Red (0) through yellow (0.5) to green (1)."""
    if not math.isfinite(acc):
        return "#f0f0f0"
    acc = min(max(acc, 0.0), 1.0)
    if acc < 0.5:
        r, g = 230, int(90 + 2 * acc * 140)
    else:
        r, g = int(230 - (acc - 0.5) * 2 * 150), 200
    return f"rgb({r},{g},110)"


def to_html(res: StressResult) -> str:
    from .._version import __version__

    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>capeval stress: {_e(res.source)}</title><style>{CSS}</style></head><body>",
             f"<h1>Stress test: {_e(res.source)}</h1>",
             f"<p class='meta'>{len(res.items)} items, capeval {_e(__version__)}. {_e(legend(res))}</p>",
             "<h2>Accuracy heatmap (metric × perturbation)</h2><table><thead><tr><th>metric</th>"]
    parts += [f"<th title='{_e(BY_NAME[p].change)}'>{_e(p)}<br><small>{_e(_EXPECT[BY_NAME[p].expected])}"
              "</small></th>" for p in res.perturbations]
    parts.append("</tr></thead><tbody>")
    for m in res.metrics:
        parts.append(f"<tr><td>{_e(m)}</td>")
        for p in res.perturbations:
            c = res.results[m][p]
            tip = (f"n={c.n}, skipped={c.skipped}, tie rate={_pct(c.tie_rate)}%, mean change={_g(c.mean_delta)} "
                   f"[{_g(c.ci[0])}, {_g(c.ci[1])}]")
            parts.append(f"<td style='background:{_colour(c.accuracy)}' title='{_e(tip)}'>{_e(cell_text(c))}</td>")
        parts.append("</tr>")
    parts.append("</tbody></table>")
    parts.append("<h2>Perturbations</h2><table><thead><tr><th>name</th><th>expected</th><th>applied</th>"
                 "<th>skipped (why)</th><th>example</th></tr></thead><tbody>")
    for p in res.perturbations:
        skipped = res.skip_reasons.get(p, {})
        why = "; ".join(f"{k}: {v}" for k, v in sorted(skipped.items(), key=lambda kv: -kv[1]))
        ex = res.examples.get(p)
        ex_html = f"{_e(ex[0])}<br>→ {_e(ex[1])}" if ex else "–"
        parts.append(f"<tr><td>{_e(p)}</td><td>{_e(_EXPECT[BY_NAME[p].expected])}</td>"
                     f"<td>{len(res.items) - sum(skipped.values())}</td><td style='text-align:left'>{_e(why) or '–'}</td>"
                     f"<td style='text-align:left;white-space:normal'>{ex_html}</td></tr>")
    parts.append("</tbody></table><h2>Mean change with bootstrap 95% CI</h2><table><thead><tr><th>metric</th>")
    parts += [f"<th>{_e(p)}</th>" for p in res.perturbations]
    parts.append("</tr></thead><tbody>")
    for m in res.metrics:
        parts.append(f"<tr><td>{_e(m)}</td>")
        for p in res.perturbations:
            c = res.results[m][p]
            parts.append(f"<td>{_e(_g(c.mean_delta))}<br><small>[{_e(_g(c.ci[0]))}, {_e(_g(c.ci[1]))}]</small></td>")
        parts.append("</tr>")
    parts.append("</tbody></table><h2>Signatures</h2><div class='sig'>")
    parts.append(f"<code>{_e(res.signature)}</code>")
    parts += [f"<code>{_e(m)}: {_e(res.metric_signatures.get(m, ''))}</code>" for m in res.metrics]
    parts.append("</div></body></html>\n")
    return "".join(parts)


def write_html(res: StressResult, path: str | Path) -> None:
    from ..outputs import atomic_write

    atomic_write(path, to_html(res))
