"""``capeval metrics``: one line per output (name, variant, range, needs) that fits 80 columns
without splitting a word, and ``--json`` with every field."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from capeval import extras
from capeval.cli.main import app
from capeval.metrics.registry import family_for, list_metrics

runner = CliRunner()


def _lines(columns: str) -> list[str]:
    res = runner.invoke(app, ["metrics"], env={"COLUMNS": columns})
    assert res.exit_code == 0, res.output
    return res.output.splitlines()


def test_one_line_per_output_at_80_columns():
    metrics = list_metrics()
    lines = _lines("80")
    rows = lines[1:1 + len(metrics)]
    assert lines[0].split() == ["name", "variant", "range", "needs"]
    assert [r.split()[0] for r in rows] == [m.name for m in metrics]  # whole names, in order
    assert all(len(line) <= 80 for line in lines[:1 + len(metrics)]), max(lines, key=len)
    assert len(lines) <= len(metrics) + 4  # the header, the rows, two notes and the install line
    by_name = {r.split()[0]: r for r in rows}
    bleu = by_name["bleu4"].split()
    assert bleu[1] == "bleu_coco" and " ".join(bleu[2:4]) == "[0, 1]" and bleu[-1] == "-"
    assert by_name["bertscore_f"].split()[-1].rstrip("*") == "bertscore"
    assert by_name["learned"].split()[-1].rstrip("*") == "semantic,bertscore"
    assert "higher is better except for ter" in lines[1 + len(metrics)]


def test_wide_terminal_keeps_the_columns_aligned():
    import re

    lines = _lines("200")[:1 + len(list_metrics())]
    for field in (1, 2):  # variant, range
        starts = {[m.start() for m in re.finditer(r"\S+", line)][field] for line in lines}
        assert len(starts) == 1, field


def test_missing_extras_are_starred_and_the_install_command_given(monkeypatch):
    monkeypatch.setattr(extras, "_importable", lambda m: m not in {"ot", "torch"})
    lines = _lines("80")
    wmd = next(line for line in lines if line.startswith("wmd "))
    assert wmd.split()[-1] == "semantic*"
    assert next(line for line in lines if line.startswith("learned ")).split()[-1] == "semantic*,bertscore*"
    lacking = ["bertscore", "image", "semantic"]  # in the order the rows first need them
    assert lines[-1] == f"* not installed: extras {', '.join(lacking)}; {extras.install_hint(lacking)}"


def test_json_lists_every_output_with_its_fields():
    res = runner.invoke(app, ["metrics", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    metrics = list_metrics()
    assert [r["name"] for r in rows] == [m.name for m in metrics]
    for r, m in zip(rows, metrics):
        assert (r["family"], r["variant"], r["higher_is_better"], r["description"]) == \
            (m.family, m.variant, m.higher_is_better, m.description)
        assert r["range"] == [None if abs(v) == float("inf") else v for v in m.range]
        assert r["extras"] == list(family_for(m.name).extras)
        assert r["missing_extras"] == extras.missing_extras(r["extras"])
    assert next(r for r in rows if r["name"] == "ter")["higher_is_better"] is False
