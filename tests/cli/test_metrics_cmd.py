"""``capeval metrics``: one row per output (name, variant, range, needs) laid out by Rich at the
terminal's width: at 80 columns no line is longer, no word is split, the columns stay aligned
and a long "needs" wraps under its own column; ``--json`` with every field."""
from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from capeval import extras
from capeval.cli.main import app
from capeval.metrics.registry import family_for, list_metrics

runner = CliRunner()


def _lines(columns: str) -> list[str]:
    res = runner.invoke(app, ["metrics"], env={"COLUMNS": columns})
    assert res.exit_code == 0, res.output
    return res.output.splitlines()


def _table(lines: list[str]) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """The header, each output's lines (its row, then the lines its wrapped "needs" continues
    on, which start with spaces) and the notes after the table."""
    rows: dict[str, list[str]] = {}
    n = len(list_metrics())
    k = 1
    while k < len(lines) and (len(rows) < n or lines[k].startswith(" ")):
        if lines[k].startswith(" "):
            rows[list(rows)[-1]].append(lines[k])
        else:
            rows[lines[k].split()[0]] = [lines[k]]
        k += 1
    return lines[0].split(), rows, lines[k:]


def _needs(row_lines: list[str]) -> list[str]:
    """The extras of a row: the text of the needs column, over all its lines."""
    start = [m.start() for m in re.finditer(r"\S+", row_lines[0])][-1]
    text = " ".join(line[start:].strip() for line in row_lines)
    return [e.strip() for e in text.split(",")]


def _aligned(header_line: str, line: str) -> bool:
    """Each column of ``line`` starts where the header's title does."""
    return all(line[k - 2:k] == "  " and line[k] != " " for k in (header_line.index(t) for t in
                                                                  ("variant", "range", "needs")))


def test_at_80_columns_every_line_fits_whole_words_aligned():
    lines = _lines("80")
    header, rows, notes = _table(lines)
    assert header == ["name", "variant", "range", "needs"]
    assert list(rows) == [m.name for m in list_metrics()]  # whole names, in order
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert not any(line != line.rstrip() for line in lines)  # no padding after the last column
    known = {e for m in list_metrics() for e in family_for(m.name).extras} | {"-"}
    needs_at = lines[0].index("needs")
    for row in rows.values():
        assert _aligned(lines[0], row[0]), row
        assert all(len(line) - len(line.lstrip()) == needs_at for line in row[1:]), row  # under "needs"
        assert {e.rstrip("*") for e in _needs(row)} <= known, row  # no extra's name split
    assert rows["bleu4"][0].split()[1:] == ["bleu_coco", "[0,", "1]", "-"]
    assert _needs(rows["learned"]) == ["semantic", "bertscore"]
    assert any(len(row) > 1 for row in rows.values())  # the case this test is for: a row wraps
    assert "higher is better except for ter" in notes[0]


def test_wide_terminal_keeps_one_line_per_output_aligned():
    lines = _lines("200")
    _, rows, _ = _table(lines)
    assert all(len(row) == 1 and _aligned(lines[0], row[0]) for row in rows.values())


def test_missing_extras_are_starred_and_the_install_command_is_one_line(monkeypatch):
    monkeypatch.setattr(extras, "_importable", lambda m: m not in {"ot", "torch"})
    lines = _lines("80")
    _, rows, notes = _table(lines)
    assert _needs(rows["wmd"]) == ["semantic*"]
    assert _needs(rows["learned"]) == ["semantic*", "bertscore*"]
    lacking = ["bertscore", "image", "semantic"]  # in the order the rows first need them
    assert notes[-2:] == [f"* not installed: extras {', '.join(lacking)}. Install them with:",
                          f"  {extras.install_command(lacking)}"]


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
