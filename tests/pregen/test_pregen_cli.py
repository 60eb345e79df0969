import csv
import json
import math

from typer.testing import CliRunner

from capeval.cli.main import app
from capeval.pregen import tiers
from capeval.pregen.results import ResultsTable, write_results
from capeval.pregen.tokens import TokenScores

runner = CliRunner()
NESTED = [[[(0.5, 0), (0.25, 3)], [(1.0, 0)]], [[(0.125, 1), (0.5, 0), (0.5, 0)]]]


def test_score_writes_all_504_with_signature(tmp_path):
    ts = TokenScores.from_nested(NESTED)
    ts.save_npz(tmp_path / "p.npz")
    res = runner.invoke(app, ["pregen", "score", "--probs", str(tmp_path / "p.npz"), "-o", str(tmp_path / "o.json")])
    assert res.exit_code == 0, res.output
    out = json.loads((tmp_path / "o.json").read_text())
    assert list(out["values"]) == tiers.column_names()
    expect = tiers.compute(ts)
    for k, v in out["values"].items():
        assert (v == "inf" and math.isinf(expect[k])) or v == expect[k]
    assert out["signature"].startswith("pregen_tanti2018|images:2|caps:3|tokens:6|rank:given|version:")
    assert tiers.BEST in res.output

    res = runner.invoke(app, ["pregen", "score", "-p", str(tmp_path / "p.npz"), "-m", "mean_max_normcount_prefix0",
                              "-o", str(tmp_path / "o.csv")])
    assert res.exit_code == 0, res.output
    rows = list(csv.reader((tmp_path / "o.csv").open()))
    assert rows[0] == ["metric", "value", "signature"]
    assert rows[1][:2] == [tiers.BEST, repr(expect[tiers.BEST])]


def test_score_reports_bad_file(tmp_path):
    res = runner.invoke(app, ["pregen", "score", "--probs", str(tmp_path / "missing.npz")])
    assert res.exit_code == 2 and "missing.npz" in res.output


def test_analyse_writes_reference_layout(tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    keys = [{"dataset": d, "architecture": "init", "run": "1", "num_strata": "1", "stratum": "0"}
            for d in ["x"] * 5 + ["y"] * 5]
    y = rng.uniform(size=10)
    t = ResultsTable(keys, {"CIDEr": y}, {tiers.BEST: y + rng.normal(0, 0.05, 10), "sum_sum_prob_none": rng.uniform(size=10)})
    write_results(tmp_path / "data.txt", t)
    res = runner.invoke(app, ["pregen", "analyse", str(tmp_path / "data.txt"), "-o", str(tmp_path / "out"), "-k", "1"])
    assert res.exit_code == 0, res.output
    lines = (tmp_path / "out" / "correlations_CIDEr.txt").read_text().splitlines()
    assert lines[0].split("\t") == ["pregen"] + [f"{g}_{m}" for g in ("x", "y", "all") for m in ("R^2", "R", "p")]
    assert len(lines) == 3
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["CIDEr"]["top"][0]["pregen"] == tiers.BEST
    assert "pregen_r2|postgen:CIDEr" in summary["CIDEr"]["signature"]
    res = runner.invoke(app, ["pregen", "analyse", str(tmp_path / "data.txt"), "--postgen", "SPICE"])
    assert res.exit_code == 2 and "SPICE" in res.output
