import json
from pathlib import Path

from typer.testing import CliRunner

from capeval.cli.main import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


def test_score_jsonl_contract(tmp_path):
    out = tmp_path / "scores.json"
    res = runner.invoke(app, ["score", "--input", str(EXAMPLES / "captions.jsonl"), "--metrics", "bleu4,cider_d",
                              "--output", str(out), "--tokenizer", "none", "-q"])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert set(data) >= {"corpus", "per_caption", "signatures"}
    assert set(data["per_caption"]) == {"bleu4", "cider_d"}
    assert len(data["per_caption"]["bleu4"]) == 5
    assert data["ids"][0] == "dogs-good"
    assert "bleu4" in res.output and "signatures" in res.output


def test_score_coco_files_and_csv_output(tmp_path):
    out = tmp_path / "scores.csv"
    res = runner.invoke(app, ["score", "-i", str(EXAMPLES / "coco_results.json"), "-a", str(EXAMPLES / "coco_annotations.json"),
                              "-m", "rouge_l,bleu1", "-o", str(out), "--tokenizer", "none", "-q"])
    assert res.exit_code == 0, res.output
    lines = out.read_text().splitlines()
    assert lines[0] == "id,rouge_l,bleu1" and len(lines) == 6


def test_line_breaks_read_as_spaces_or_refused_with_strict_flag(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text(json.dumps({"id": "q", "candidate": "a\rb", "references": ["a b"]}) + "\n" +
                 json.dumps({"id": "r", "candidate": "c", "references": ["c"]}) + "\n")
    out = tmp_path / "s.json"
    res = runner.invoke(app, ["score", "-i", str(p), "-m", "bleu1", "--tokenizer", "none", "-q", "-o", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["per_caption"]["bleu1"][0] > 0.99  # "a\rb" read as "a b"
    assert "tok:none+breaks=space" in res.output
    res = runner.invoke(app, ["score", "-i", str(p), "-m", "bleu4", "--tokenizer", "none", "-q",
                              "--strict-line-breaks"])
    assert res.exit_code == 2
    assert "candidate 0 (id 'q')" in res.output and "line break" in res.output


def test_metrics_lists():
    res = runner.invoke(app, ["metrics"])
    assert res.exit_code == 0 and "cider_d" in res.output


def test_metric_options_parsed():
    from capeval.cli.score import parse_options

    assert parse_options(["wmd.vectors=spacy-md", "cider_d.sigma=6.0", "meteor.workers=2"]) == {
        "wmd": {"vectors": "spacy-md"}, "cider_d": {"sigma": 6.0}, "meteor": {"workers": 2}}


def test_bad_metric_option_is_a_clear_error():
    res = runner.invoke(app, ["score", "-i", str(EXAMPLES / "captions.jsonl"), "-m", "bleu4", "-O", "novalue", "-q"])
    assert res.exit_code == 2 and "FAMILY.KEY=VALUE" in res.output
