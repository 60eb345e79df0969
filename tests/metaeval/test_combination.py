import json

import pytest
from typer.testing import CliRunner

from capeval.metaeval.combination import run_combination
from capeval.metaeval.tables import combination_markdown, combination_to_json
from capeval.cli.main import app
from capeval.errors import InputError
from capeval.stats.combination import combine
from capeval.stats.correlation import correlate
from capeval.service.cache import ScoreCache


def test_run_combination(toy_data, tmp_path):
    import capeval

    run = run_combination("toy-corr", ["bleu1", "bleu4", "cider_d"], cache=ScoreCache(tmp_path), tokenizer="none")
    t = toy_data["toy-corr"]
    direct = capeval.score(t.candidates, t.references, ["bleu1", "cider_d"], tokenizer="none")
    pair = next(c for c in run.search.combinations if c.metrics == ("bleu1", "cider_d"))
    assert pair.value == correlate(combine(direct.per_caption, ["bleu1", "cider_d"]), t.human, "tau-c").value
    assert len(run.search.combinations) == 3 + 1
    out = combination_to_json(run)
    assert out["best_single"] == run.search.best_single and out["statistic"] == "kendall_tau_c"
    assert "norm:z|test:williams-pearson|df:n-3" in out["_signatures"]["benchmark"]
    md = combination_markdown(run)
    assert "| bleu1+cider_d |" in md and str(run.signature()) in md
    with pytest.raises(InputError, match="not a correlation benchmark"):
        run_combination("toy-pairs", ["bleu1", "bleu4"], cache=ScoreCache(tmp_path), tokenizer="none")


def test_combine_cli(toy_data, tmp_path):
    out = tmp_path / "c.json"
    res = CliRunner().invoke(app, ["combine", "toy-corr", "-m", "bleu1,bleu4,cider_d", "--sizes", "2", "--norm",
                                   "minmax", "--tokenizer", "none", "--cache-dir", str(tmp_path), "--json", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["normalisation"] == "minmax" and len(data["combinations"]) == 3
    bad = CliRunner().invoke(app, ["combine", "toy-corr", "-m", "bleu1", "--tokenizer", "none", "--no-cache"])
    assert bad.exit_code == 2 and "at least two metrics" in bad.output
