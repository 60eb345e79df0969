"""``capeval score --output``: the formats its help names are the ones written, an unknown
suffix is refused before any work, and the streamed progress knows the input's size."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from capeval.cli._stream import row_total
from capeval.cli.main import app
from capeval.inputs import OUTPUT_SUFFIXES

runner = CliRunner()


def _input(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_text(json.dumps({"id": "a", "candidate": "a dog", "references": ["a dog runs"]}) + "\n\n"
                 + json.dumps({"id": "b", "candidate": "two cats", "references": ["two cats"]}) + "\n")
    return p


def test_help_names_every_output_format():
    res = runner.invoke(app, ["score", "--help"], env={"COLUMNS": "400"})
    text = " ".join(res.output.split())
    for suffix in (".json", ".jsonl", ".csv", ".parquet"):
        assert suffix in text
    assert "x.csv -> x.signatures.json" in text
    assert set(OUTPUT_SUFFIXES) == {".json", ".jsonl", ".ndjson", ".csv", ".parquet"}


@pytest.mark.parametrize("name", ["scores.tsv", "scores.txt", "scores"])
def test_unknown_output_suffix_is_refused_before_work(tmp_path, name):
    out = tmp_path / name
    res = runner.invoke(app, ["score", "-i", str(_input(tmp_path)), "-m", "bleu1", "-q", "-o", str(out)])
    assert res.exit_code == 2
    assert "unknown output format" in res.output and not out.exists()


def test_signatures_file_drops_the_outputs_extension(tmp_path):
    out = tmp_path / "scores.jsonl"
    res = runner.invoke(app, ["score", "-i", str(_input(tmp_path)), "-m", "bleu1", "-q", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "scores.signatures.json").is_file()
    assert not (tmp_path / "scores.jsonl.signatures.json").exists()


def test_row_total_for_the_progress_bar(tmp_path):
    assert row_total(_input(tmp_path)) == 2  # the blank line holds no row
    csv = tmp_path / "x.csv"
    csv.write_text("id,candidate,ref1\na,b,c\n")
    assert row_total(csv) is None  # a CSV row may span lines: no total
    assert row_total(tmp_path / "missing.jsonl") is None
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"candidate": ["a", "b", "c"], "references": [["a"], ["b"], ["c"]]}), tmp_path / "x.parquet")
    assert row_total(tmp_path / "x.parquet") == 3
