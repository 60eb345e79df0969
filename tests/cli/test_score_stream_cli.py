"""`capeval score` streaming: the contract (one JSON object per input row, in input order),
--jobs, and the cases that cannot stream."""
import json
from pathlib import Path

from typer.testing import CliRunner

from capeval import score
from capeval.cli.main import app
from capeval.inputs import read_jsonl, write_result

from ..stream._rows import make_rows, write_jsonl

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


def test_jsonl_contract_jobs_2_equals_in_memory_bytes(tmp_path):
    src = tmp_path / "in.jsonl"
    write_jsonl(src, make_rows(900))
    out = tmp_path / "o.jsonl"
    res = runner.invoke(app, ["score", "-i", str(src), "-m", "bleu4,rouge_l,cider_d", "-o", str(out),
                              "--jobs", "2", "--chunk-size", "200", "-q"])
    assert res.exit_code == 0, res.output
    ids, cands, refs = read_jsonl(src)
    mem = score(cands, refs, ["bleu4", "rouge_l", "cider_d"], ids=ids)
    write_result(mem, tmp_path / "mem.jsonl", ids)
    assert out.read_bytes() == (tmp_path / "mem.jsonl").read_bytes()
    lines = out.read_text().splitlines()
    assert [json.loads(x)["id"] for x in lines] == ids
    assert f"{mem.corpus['cider_d']:.6f}" in res.output


def test_stream_flags_refused_when_run_cannot_stream(tmp_path):
    src = tmp_path / "in.jsonl"
    write_jsonl(src, make_rows(20))
    res = runner.invoke(app, ["score", "-i", str(src), "-m", "bleu4", "-o", str(tmp_path / "o.json"), "--jobs", "2"])
    assert res.exit_code == 2 and "one JSON document" in res.output
    from tests.learn._floor_model import REFUSAL, floor_model

    model = floor_model(tmp_path / "floor.npz")
    res = runner.invoke(app, ["score", "-i", str(src), "-m", "bleu4,learned", "-O", f"learned.model={model}",
                              "--engine", "ray"])
    assert res.exit_code == 2 and f"learned does not stream (learned: {REFUSAL}" in " ".join(res.output.split())
    res = runner.invoke(app, ["score", "-i", str(src), "-m", "bleu4,bertscore_f", "-O", "bertscore.idf=true", "--jobs", "2"])
    assert res.exit_code == 2 and "bertscore reproduces bert_score's batch padding (padding_floor)" in \
        " ".join(res.output.split())


def test_coco_input_with_row_file_output(tmp_path):
    out = tmp_path / "s.jsonl"
    res = runner.invoke(app, ["score", "-i", str(EXAMPLES / "coco_results.json"), "-a",
                              str(EXAMPLES / "coco_annotations.json"), "-m", "rouge_l,bleu1", "-o", str(out),
                              "--tokenizer", "none", "-q"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 5 and list(rows[0]) == ["id", "rouge_l", "bleu1"]
    assert json.loads(out.with_suffix(".signatures.json").read_text())["corpus"].keys() == {"rouge_l", "bleu1"}


def test_jobs_streams_or_is_refused_whatever_else_is_in_metrics(tmp_path, monkeypatch):
    """One --jobs rule: a family with its own processes (spice) in -m does not turn a refused
    --jobs into an in-memory run; the refusal gives the reason and the way out, and the way out
    (-O spice.n_process=N, no --jobs) runs in memory with N parse processes."""
    import capeval.api

    seen = {}

    def fake_score(cands, refs, names, **kw):
        seen.update(kw["plan"].options)  # the CLI hands capeval.score its ScoringPlan
        return score(cands, refs, ["bleu4"], ids=kw.get("ids"))

    monkeypatch.setattr(capeval.api, "score", fake_score)
    src = tmp_path / "in.jsonl"
    write_jsonl(src, make_rows(5))
    for metrics in ("bleu4,meteor,cider_d,spice,bertscore_f", "bleu4,bertscore_f"):
        res = runner.invoke(app, ["score", "-i", str(src), "-m", metrics, "--jobs", "2", "-q"])
        text = " ".join(res.output.split())
        assert res.exit_code == 2, text
        assert "--jobs streams the input, but bertscore_f does not stream" in text
        assert "Run without it to score in memory" in text
        assert ("-O spice.n_process=2" in text) == ("spice" in metrics)
        assert "Traceback" not in text and not seen
    out = str(tmp_path / "o.json")
    res = runner.invoke(app, ["score", "-i", str(src), "-m", "bleu4,spice", "--jobs", "2", "-q", "-o", out])
    assert res.exit_code == 2 and "one JSON document" in res.output and not seen
    res = runner.invoke(app, ["score", "-i", str(src), "-m", "bleu4,spice", "-O", "spice.n_process=2", "-q", "-o", out])
    assert res.exit_code == 0, res.output
    assert seen["spice"]["n_process"] == 2
    res = runner.invoke(app, ["score", "-i", str(src), "-m", "bleu4,spice", "--jobs", "2", "--engine", "ray", "-o", out,
                              "--overwrite"])
    assert res.exit_code == 2 and "--jobs/--engine stream the input" in " ".join(res.output.split())


def test_metric_set_names_expand(tmp_path):
    from capeval.cli.score import _parse_metrics
    from capeval.metrics.registry import METRIC_SETS

    assert _parse_metrics("coco") == list(METRIC_SETS["coco"])
    assert _parse_metrics("bleu4, ngram") == list(dict.fromkeys(("bleu4",) + METRIC_SETS["ngram"]))
