"""One self-contained HTML page for ``capeval bench --report out.html``.

Inline CSS and inline SVG figures only: no scripts, no external URLs, so the page opens
offline, in a mail attachment or a CI artefact viewer. Per benchmark it shows the table of
:func:`capeval.metaeval.tables.build_table` with its signatures underneath, then the figures
its kind calls for:

- correlation: score distributions per human rating level, the metric–metric correlation
  heatmap, and the Williams significance matrix (Pearson, one-sided, df recorded);
- pairwise: accuracy bars per category; for ``distractors`` also per-task mean/worst and a
  metric × task heatmap;
- system: the metric agreement heatmap.

The statistics are computed before any rendering starts (:func:`capeval.metaeval.report_stats.report_statistics`,
all from :mod:`capeval.stats`); this module only lays out numbers it is given.
"""
from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..errors import InputError
from ..stats.correlation import canonical_statistic
from ..stats.williams import DF_RULES
from . import figures
from .report_stats import ReportStatistics, report_statistics
from .runner import BenchResult, higher_is_better
from .tables import build_table

DEFAULT_AGREEMENT = "kendall_tau_b"
_LABEL = {"kendall_tau_b": "Kendall τb", "kendall_tau_c": "Kendall τc", "pearson": "Pearson r",
          "spearman": "Spearman ρ", "r2": "R²"}

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0 auto;
max-width:1180px;padding:1.2rem 1.6rem;color:#1d1d1f;line-height:1.4}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;
margin-top:2.2rem}h3{font-size:1rem;margin:1.4rem 0 .4rem}
nav ul{columns:3;padding-left:1.2rem}
table{border-collapse:collapse;font-size:.86rem;margin:.4rem 0}
th,td{padding:.22rem .6rem;border-bottom:1px solid #e3e3e3;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}thead th{border-bottom:2px solid #999;background:#f6f6f6}
td.best{font-weight:600;background:#eaf4ea}
.sig{font-size:.74rem;color:#555;margin:.2rem 0 1rem}.sig code{display:block;overflow-wrap:anywhere;
white-space:pre-wrap}
.meta{color:#555;font-size:.85rem}
figure{margin:1rem 0;padding:0}figure svg{max-width:100%;height:auto;display:block}
figcaption{font-size:.8rem;color:#444;margin-top:.3rem;max-width:60rem}
.note{font-size:.82rem;color:#7a4d00;background:#fff6e0;padding:.3rem .6rem;border-radius:3px}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _fmt(v: Any, digits: int) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.{digits}f}" if math.isfinite(v) else "nan"
    return str(v)


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "benchmark"


def html_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], *, digits: int = 2,
               best: Sequence[int] = (), lower_is_better: Sequence[int] = (),
               row_sign: Sequence[float] | None = None) -> str:
    """A plain table; columns listed in ``best`` get their top value bolded.

    ``row_sign`` (one ±1 per row) flips rows before ranking: a correlation of −0.3 is the
    better agreement for a lower-is-better metric such as TER.
    """
    signs = list(row_sign) if row_sign is not None else [1.0] * len(rows)
    tops: dict[int, float] = {}
    for c in best:
        vals = [sg * r[c] for r, sg in zip(rows, signs)
                if isinstance(r[c], (int, float, np.floating)) and math.isfinite(r[c])]
        if vals:
            tops[c] = min(vals) if c in lower_is_better else max(vals)
    out = ["<table><thead><tr>", *(f"<th>{_e(c)}</th>" for c in columns), "</tr></thead><tbody>"]
    for row, sg in zip(rows, signs):
        out.append("<tr>")
        for c, v in enumerate(row):
            cls = ' class="best"' if c in tops and sg * v == tops[c] else ""
            out.append(f"<td{cls}>{_e(_fmt(v, digits))}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def signature_block(lines: Sequence[str]) -> str:
    return '<div class="sig">' + "".join(f"<code>{_e(s)}</code>" for s in lines) + "</div>"


def _figure(svg: str, caption: str, signatures: Sequence[str] = ()) -> str:
    sig = "".join(f"<br><code>{_e(s)}</code>" for s in signatures)
    return f"<figure>{svg}<figcaption>{caption}{sig}</figcaption></figure>"


class _Salt:
    """Unique, deterministic per-figure salts (see :func:`figures.to_svg`)."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> str:
        self.n += 1
        return f"capeval-fig{self.n}"


# ---- sections ----------------------------------------------------------------------------------

def _table_section(result: BenchResult) -> str:
    t = build_table(result)
    digits = {"correlation": 3, "pairwise": 2}.get(result.kind, 4)
    n_num = len(t.columns) - 1
    best = []
    if result.kind in ("correlation", "pairwise"):
        best = [c for c in range(1, n_num + 1)
                if all(isinstance(r[c], (float, np.floating)) for r in t.rows) and t.columns[c] != "ties"]
    # Pairwise accuracies already account for direction; raw correlations do not.
    row_sign = None
    if result.kind == "correlation":
        # Rows follow result.metrics. A user's scores column is not in the registry: the run
        # records every column's direction (results built by hand fall back to the registry).
        known = result.higher_is_better
        row_sign = [1.0 if (known[m] if m in known else higher_is_better(m)) else -1.0 for m in result.metrics]
    parts = [f"<h3>{_e(t.title)}</h3>", f'<p class="meta">Values: {_e(t.scale)}.</p>',
             html_table(t.columns, t.rows, digits=digits, best=best, row_sign=row_sign)]
    parts.append(signature_block(t.notes))
    return "".join(parts)


def _correlation_figures(result: BenchResult, stats: ReportStatistics, salt: _Salt) -> str:
    scores = {m: np.asarray(result.scores[m], dtype=float) for m in result.metrics if m in result.scores}
    if not scores or result.human is None:
        return '<p class="note">No per-row scores in this result: figures skipped.</p>'
    bench_sig = result.signature()
    out = ["<h3>Score distributions per human rating</h3>"]
    out.append(_figure(
        figures.rating_distributions(scores, result.human, salt=salt()),
        f"{_e(result.name)}: each metric's per-row scores grouped by human rating "
        f"({len(result.human)} rows). Box: quartiles; whiskers: 5th–95th percentile; red line: median; "
        "dot: mean; n: rows at that level.", [bench_sig]))
    # Outputs with undefined (NaN) rows, such as SPICE's categories, appear in the
    # distributions above but not in the matrices below (see meta.experiments.metric_agreement).
    agr = stats.agreement
    if agr is None:
        return "".join(out)
    label = _LABEL[agr.statistic]
    out.append("<h3>Metric–metric correlation</h3>")
    out.append(_figure(
        figures.heatmap(agr.names, agr.names, agr.matrix, salt=salt(), colorbar=label),
        f"{_e(label)} between the metrics' per-row scores on {_e(result.name)}.",
        [str(agr.signature(result.name))]))
    out.append("<h3>Williams significance</h3>")
    out.append(_figure(
        figures.significance_matrix(agr.names, agr.williams_p, salt=salt()),
        "Williams test (Graham &amp; Baldwin 2014) of corr(human, A) &gt; corr(human, B) with Pearson r, "
        f"one-sided, df rule {_e(agr.df_rule)}. Green: p &lt; 0.05 (lighter to darker: 0.05, 0.01, 0.001).",
        [str(agr.williams_signature(result.name)), bench_sig]))
    return "".join(out)


def _pairwise_figures(result: BenchResult, stats: ReportStatistics, salt: _Salt) -> str:
    exp = result.experiment
    acc = {m: exp.results[m].percent() for m in result.metrics}
    cats = [*exp.categories, "mean"]
    out = ["<h3>Accuracy per category</h3>", _figure(
        figures.accuracy_bars(cats, acc, salt=salt()),
        f"Pairwise accuracy on {_e(result.name)} per category and their plain mean; dashed: chance (50%). "
        f"Metric ties: {_e(result.tie_policy)}.", [result.signature()])]
    if stats.distractors:
        out.append(_distractor_section(result, stats, salt))
    return "".join(out)


def _distractor_section(result: BenchResult, stats: ReportStatistics, salt: _Salt) -> str:
    exp = result.experiment
    sums = stats.distractors
    tasks = list(exp.categories)
    rows = [[m, s.mean, s.worst, s.worst_task, sum(s.ties.values())] for m, s in sums.items()]
    out = ["<h3>Distractor robustness: mean and worst task</h3>",
           html_table(["metric", "mean", "worst", "worst task", "ties"], rows, digits=2, best=[1, 2]),
           signature_block([result.signature()])]
    mat = np.array([[sums[m].per_task[t] for t in tasks] + [sums[m].mean, sums[m].worst] for m in result.metrics])
    out.append(_figure(
        figures.heatmap(list(result.metrics), [*tasks, "mean", "worst"], mat, salt=salt(), vmin=0, vmax=100,
                        cmap="RdYlGn", fmt="{:.1f}", colorbar="accuracy (%)"),
        "Accuracy (%) of choosing the correct caption over the distractor, per task; 50 = chance. "
        f"Items per task: {_e(', '.join(f'{t} {n}' for t, n in exp.results[result.metrics[0]].n.items()))}.",
        [result.signature()]))
    return "".join(out)


def _system_figures(result: BenchResult, salt: _Salt) -> str:
    exp = result.experiment
    if exp.metric_matrix is None:
        return ""
    names, mat = exp.metric_matrix
    return "<h3>Metric agreement over systems</h3>" + _figure(
        figures.heatmap(names, names, mat, salt=salt(), colorbar="Kendall τb"),
        f"Kendall τb between the metrics' system scores ({len(exp.systems)} systems, {_e(exp.aggregate)}).",
        [result.signature()])


def build_report(results: Sequence[BenchResult], *, title: str = "capeval benchmark report", df: str = "n-3",
                 agreement: str = DEFAULT_AGREEMENT) -> str:
    """The whole page as a string: every statistic first (``df``: the Williams df rule,
    ``agreement``: the metric–metric statistic), then the layout."""
    if not results:
        raise InputError("no benchmark results to report")
    if df not in DF_RULES:
        raise InputError(f"unknown Williams df rule {df!r}; choose one of {', '.join(DF_RULES)}")
    agreement = canonical_statistic(agreement)
    stats = [report_statistics(r, df=df, agreement=agreement) for r in results]
    salt = _Salt()
    ids: dict[str, int] = {}
    nav, body = [], []
    for r, st in zip(results, stats):
        slug = _slug(r.name)
        ids[slug] = ids.get(slug, 0) + 1
        if ids[slug] > 1:
            slug = f"{slug}-{ids[slug]}"
        nav.append(f'<li><a href="#{slug}">{_e(r.name)}</a> <span class="meta">({_e(r.kind)})</span></li>')
        sec = [f'<section id="{slug}"><h2>{_e(r.name)}</h2>',
               f'<p class="meta">{_e(", ".join(f"{k}={v}" for k, v in r.protocol.items()))}</p>',
               _table_section(r)]
        if r.kind == "correlation":
            sec.append(_correlation_figures(r, st, salt))
        elif r.kind == "pairwise":
            sec.append(_pairwise_figures(r, st, salt))
        else:
            sec.append(_system_figures(r, salt))
        sec.append("</section>")
        body.append("".join(sec))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{_e(title)}</h1><p class=\"meta\">capeval {_e(__version__)} · {len(results)} benchmark(s) · "
        "every number carries its signature (name|key:value|…|version)</p></header>"
        f"<nav><ul>{''.join(nav)}</ul></nav><main>{''.join(body)}</main></body></html>\n"
    )


def write_report(results: Sequence[BenchResult], path: Path | str, **kw) -> Path:
    path = Path(path)
    from ..outputs import atomic_write

    atomic_write(path, build_report(results, **kw))
    return path


__all__ = ["build_report", "write_report", "html_table"]
