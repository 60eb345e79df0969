"""The HTML report: content, self-containedness, and rendering in a real headless Chromium."""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

import numpy as np
import pytest
from typer.testing import CliRunner

import capeval.data
from capeval.metaeval import figures
from capeval.service.cache import ScoreCache
from capeval.metaeval.report import build_report, html_table
from capeval.metaeval.report_stats import report_statistics
from capeval.metaeval.runner import run_benchmark
from capeval.cli.main import app
from capeval.data.records import PairwiseTable
from capeval.data.distractor_tasks import TASKS
from capeval.stats.williams import williams_from_scores, williams_matrix
from tests._needs import CHROMIUM, requires

from .conftest import WORDS, make_tables

pytest.importorskip("matplotlib")

METRICS = ["bleu1", "bleu4", "rouge_l", "cider_d"]


def toy_distractors() -> PairwiseTable:
    rng = np.random.default_rng(1)
    n = 48
    refs = [[" ".join(rng.choice(WORDS, 7)) for _ in range(3)] for _ in range(n)]
    good = [" ".join(r[0].split()[:5] + list(rng.choice(WORDS, 2))) for r in refs]
    bad = [" ".join(rng.permutation(g.split())) if i % 2 else " ".join(rng.choice(WORDS, 7))
           for i, g in enumerate(good)]
    tasks = [TASKS[i % 4] for i in range(n)]
    return PairwiseTable("toy-distractors", good, bad, refs, np.zeros(n), tasks,
                         {"dataset": "distractors", "rows": str(n), "gen_seed": "2016"})


@pytest.fixture(scope="module")
def results():
    tables = {**make_tables(), "toy-distractors": toy_distractors()}
    with pytest.MonkeyPatch.context() as mp:
        real = capeval.data.load
        mp.setattr(capeval.data, "load", lambda name, root=None, **o: tables[name] if name in tables
                   else real(name, root, **o))
        cache = ScoreCache(enabled=False)
        return [run_benchmark(n, METRICS, cache=cache) for n in tables]


@pytest.fixture(scope="module")
def page(results):
    return build_report(results, title="toy <report>")


# correlation: distributions, metric heatmap, Williams; pairwise: bars; distractors: bars + heatmap;
# system: agreement heatmap
EXPECTED_FIGURES = 3 + 1 + 2 + 1


def test_page_is_self_contained(page):
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page.lower() and "<link" not in page.lower() and "<iframe" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:|//|file:)""", page, re.I)
    assert not re.search(r"url\(\s*['\"]?\s*(https?:|//)", page, re.I)
    assert "<metadata>" not in page and "<?xml" not in page
    assert page.count("<svg") == EXPECTED_FIGURES == page.count("<figure>")
    assert "toy &lt;report&gt;" in page  # titles are escaped


def test_every_table_has_its_signatures(page, results):
    sections = page.split("<section ")[1:]
    assert len(sections) == len(results)
    for sec, r in zip(sections, results):
        for table in re.finditer(r"</table>", sec):
            after = sec[table.end():table.end() + 30]
            assert after.startswith('<div class="sig"><code>'), r.name
        assert html.escape(str(r.signature())) in sec
        for sig in r.metric_signatures.values():
            assert html.escape(sig) in sec
    assert re.search(r"williams\|dataset:toy-corr\|corr:pearson\|tail:one\|df:n-3=57\|n:60\|version:", page)


def test_distractor_section_reports_mean_and_worst(page, results):
    dis = next(r for r in results if r.name == "toy-distractors")
    sec = page.split('<section id="toy-distractors">')[1]
    assert "worst task" in sec
    for m in METRICS:
        pct = dis.experiment.results[m].percent()
        per_task = {k: v for k, v in pct.items() if k != "mean"}
        worst_task = min(per_task, key=lambda k: (per_task[k], k))
        row = re.search(rf"<tr><td>{m}</td><td[^>]*>([\d.]+)</td><td[^>]*>([\d.]+)</td><td>([\w-]+)</td>", sec)
        assert row, m
        assert float(row.group(1)) == pytest.approx(pct["mean"], abs=0.005)
        assert float(row.group(2)) == pytest.approx(per_task[worst_task], abs=0.005)
        assert row.group(3) == worst_task


def test_report_is_deterministic(results, page):
    corr = [r for r in results if r.kind == "correlation"]
    assert build_report(corr, title="toy <report>") == build_report(corr, title="toy <report>")


def test_williams_matrix_cells_are_the_meta_test(results):
    r = next(r for r in results if r.kind == "correlation")
    names, p = williams_matrix(r.scores, r.human, df="n-2")
    i, j = names.index("cider_d"), names.index("bleu1")
    assert p[i, j] == williams_from_scores(r.human, r.scores["cider_d"], r.scores["bleu1"], df="n-2").p_value
    assert np.isnan(np.diag(p)).all()
    # an identical pair is not testable (K = 0): NaN, not an exception
    _, q = williams_matrix({"a": r.scores["bleu1"], "b": r.scores["bleu1"]}, r.human)
    assert np.isnan(q).all()


def test_report_statistics_per_kind(results):
    by_name = {r.name: r for r in results}
    corr = report_statistics(by_name["toy-corr"], df="n-2", agreement="spearman")
    assert corr.agreement.names == METRICS and corr.agreement.df_rule == "n-2" and not corr.distractors
    assert corr.agreement.statistic == "spearman" and corr.agreement.n == len(by_name["toy-corr"].human)
    dis = report_statistics(by_name["toy-distractors"], df="n-3", agreement="kendall_tau_b")
    assert list(dis.distractors) == METRICS and dis.agreement is None
    assert dis.distractors["bleu4"].per_task == {k: v for k, v in
                                                 by_name["toy-distractors"].experiment.results["bleu4"].percent().items()
                                                 if k != "mean"}
    plain = report_statistics(by_name["toy-pairs"], df="n-3", agreement="kendall_tau_b")
    assert plain.agreement is None and not plain.distractors


def test_rating_levels():
    labels, idx = figures.rating_levels(np.array([1, 2, 2, 4, 1.0]))
    assert labels == ["1", "2", "4"] and idx.tolist() == [0, 1, 1, 2, 0]
    frac = np.linspace(0, 1, 21)
    labels, idx = figures.rating_levels(frac)
    assert len(labels) == figures.RATING_BINS and idx.min() == 0 and idx.max() == figures.RATING_BINS - 1
    assert labels[-1].endswith("]") and np.bincount(idx).sum() == 21


def test_html_table_escapes_and_marks_best():
    t = html_table(["metric", "acc"], [["<b>", 50.0], ["x", 75.25]], digits=1, best=[1])
    assert "&lt;b&gt;" in t and '<td class="best">75.2</td>' in t and "<td>50.0</td>" in t


def test_report_refuses_bad_options(results):
    from capeval.errors import InputError

    with pytest.raises(InputError, match="df rule"):
        build_report(results, df="n-4")
    with pytest.raises(InputError, match="no benchmark results"):
        build_report([])


def test_cli_report_flag(toy_data, tmp_path):
    out = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["bench", "toy-pairs", "-m", "bleu1,cider_d", "--no-cache", "--quiet",
                                   "--report", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text(encoding="utf-8")
    assert text.count("<svg") == 1 and "toy-pairs|rows:40|stat:acc|ties:half|" in text


# ---- headless Chromium ----------------------------------------------------------------------------

# RESOURCES.md: the flags that run Debian's chromium headless as root, offline.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--enable-logging=stderr", "--v=0",
         "--window-size=1280,900"]
# Appended to a copy of the page (the report itself has no scripts): once loaded, record
# every figure element's rendered box where --dump-dom can see it.
PROBE = """<script>
window.addEventListener("load", () => {
  const out = [...document.querySelectorAll("svg, img")].filter(e => !e.parentElement.closest("svg")).map(e => {
    const r = e.getBoundingClientRect();
    return {tag: e.tagName.toLowerCase(), w: r.width, h: r.height,
            loaded: e.tagName.toLowerCase() !== "img" || (e.complete && e.naturalWidth > 0)};
  });
  const pre = document.createElement("pre");
  pre.id = "capeval-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


@pytest.fixture(scope="module")
@requires("chromium")  # apt-get install chromium; .ci/run installs it
def chromium():
    return next(path for name in CHROMIUM if (path := shutil.which(name)))


def render(chromium: str, page: str, tmp_path) -> tuple[list[dict], list[str]]:
    """Load ``page`` in headless Chromium: (rendered figure boxes, console messages)."""
    probe_at = page.rindex("</body>")
    src = tmp_path / "page.html"
    src.write_text(page[:probe_at] + PROBE + page[probe_at:], encoding="utf-8")
    profile = tmp_path / "profile"
    profile.mkdir()
    proc = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", src.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    probe = re.search(r'<pre id="capeval-probe">(.*?)</pre>', proc.stdout, re.S)
    assert probe, "the page did not finish loading (probe missing from the dumped DOM)"
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    return json.loads(html.unescape(probe.group(1))), console


def test_report_renders_in_headless_chromium(chromium, page, tmp_path):
    boxes, console = render(chromium, page, tmp_path)
    assert console == []
    assert len(boxes) == EXPECTED_FIGURES
    for k, box in enumerate(boxes):
        assert box["loaded"] and box["w"] > 50 and box["h"] > 50, (k, box)


def test_browser_harness_sees_console_errors_and_empty_figures(chromium, tmp_path):
    """The checks above can fail: a console error and a zero-size figure are both seen."""
    bad = ('<!DOCTYPE html><html><body><figure><svg width="0" height="0"></svg></figure>'
           '<img src="missing.png" alt=""><script>console.error("deliberate")</script></body></html>')
    boxes, console = render(chromium, bad, tmp_path)
    assert any("deliberate" in line for line in console)
    assert boxes[0]["w"] == 0 and boxes[1]["loaded"] is False


def test_best_cell_respects_lower_is_better_rows():
    from capeval.metaeval.report import html_table

    rows = [["bleu4", 30.0], ["ter", -40.0]]
    page = html_table(["metric", "tau"], rows, best=[1], row_sign=[1.0, -1.0])
    assert '<td class="best">-40.00</td>' in page and '<td class="best">30.00</td>' not in page
    plain = html_table(["metric", "tau"], rows, best=[1])
    assert '<td class="best">30.00</td>' in plain
