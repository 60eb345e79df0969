"""Messages that used to mislead (issue 40, item 6): each names the way out that works, on the
streamed and the in-memory path alike; exit 2, no traceback."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from capeval.cli.main import app

ROW = {"id": "a", "candidate": "a dog runs", "references": ["a dog runs fast"]}
runner = CliRunner()


def _run(*args):
    res = runner.invoke(app, ["score", *map(str, args), "-q"])
    assert "Traceback" not in res.output
    return res, " ".join(res.output.split())


# -o .json scores in memory; no -o streams (bleu4 and rouge_l stream): both paths read and check.
PATHS = {"streamed": [], "in memory": ["-o", "out.json"]}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("ref", ["", "   "])
def test_empty_reference_refusal_and_its_way_out(tmp_path, monkeypatch, path, ref):
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({**ROW, "references": [ref]}) + "\n" + json.dumps({**ROW, "id": "b"}) + "\n")
    res, text = _run("-i", src, "-m", "bleu4,rouge_l", *PATHS[path])
    assert res.exit_code == 2, text
    assert "reference 0 of item 0 (id 'a') is empty. Pass allow_empty=True (CLI: --allow-empty)" in text
    res, text = _run("-i", src, "-m", "bleu4,rouge_l", "--allow-empty", *PATHS[path])
    assert res.exit_code == 0, text  # the named way out works


@pytest.mark.parametrize("path", PATHS)
def test_json_array_in_jsonl_says_one_object_per_line(tmp_path, monkeypatch, path):
    monkeypatch.chdir(tmp_path)
    for name, text in (("one.jsonl", json.dumps([ROW])), ("pretty.jsonl", json.dumps([ROW], indent=2))):
        (tmp_path / name).write_text(text + "\n")
        res, out = _run("-i", tmp_path / name, "-m", "bleu4", *PATHS[path])
        assert res.exit_code == 2 and f"{name}:1:" in out and "one JSON object per line" in out, out


def test_json_list_of_rows_says_jsonl(tmp_path):
    src = tmp_path / "rows.json"
    src.write_text(json.dumps([ROW]))
    res, text = _run("-i", src, "-m", "bleu4")
    assert res.exit_code == 2 and "a .jsonl file with one JSON object per line" in text, text


def test_jsonl_with_annotations_says_drop_annotations(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(ROW) + "\n")
    ann = tmp_path / "ann.json"
    ann.write_text(json.dumps({"annotations": [{"image_id": 1, "caption": "a dog"}]}))
    res, text = _run("-i", src, "-a", ann, "-m", "bleu4")
    assert res.exit_code == 2 and "JSONL rows carry their own references" in text and "Drop --annotations" in text
    assert "Extra data" not in text
