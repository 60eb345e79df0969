import warnings
from collections import Counter

import numpy as np
import pytest

from capeval.errors import InputError
from capeval.pregen import tiers
from capeval.pregen.analysis import (
    correlate,
    default_groups,
    dropped_columns,
    read_correlations,
    scatter_plot,
    write_correlations,
)
from capeval.pregen.results import ResultsTable, read_results, write_results

POSTGEN = ("METEOR", "CIDEr", "SPICE", "WMD")


@pytest.fixture(scope="module")
def published(data_dir):
    return data_dir / "pregen_tanti2018" / "results"


@pytest.fixture(scope="module")
def table(published):
    return read_results(published / "data.txt")


@pytest.mark.data
def test_results_file_shape(table):
    assert len(table) == 540
    assert list(table.postgen) == list(POSTGEN)
    assert list(table.pregen) == tiers.column_names()
    assert sum(int(np.isinf(c).sum()) for c in table.pregen.values()) == 20372
    assert default_groups(table) == ["mscoco", "flickr30k", "flickr8k", "all"]


@pytest.mark.data
@pytest.mark.parametrize("metric", POSTGEN)
def test_reproduces_published_correlations(table, published, metric):
    """Every R², R and p of correlations_<metric>.txt, same surviving columns, same order."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        corr = correlate(table, metric)
    groups, pub = read_correlations(published / f"correlations_{metric}.txt")
    assert corr.groups == groups
    assert list(corr.rows) == list(pub)
    assert len(corr.rows) == 361 and len(corr.dropped) == 143
    for name, cells in pub.items():
        for g in groups:
            ours = corr.rows[name][g]
            assert ours.r2 == pytest.approx(cells[g].r2, abs=1e-12), (name, g)
            assert ours.r == pytest.approx(cells[g].r, abs=1e-12), (name, g)
            assert ours.p == pytest.approx(cells[g].p, rel=1e-9, abs=1e-9), (name, g)


@pytest.mark.data
def test_headline_numbers_and_drop_breakdown(table):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        corr = correlate(table, "CIDEr")
    best, runner_up = corr.top(2)
    assert best[0] == tiers.BEST
    assert round(best[1].r2, 5) == 0.93716 and round(best[1].r, 5) == 0.96807
    assert runner_up[0] == "mean_mean_normcount_prefix0" and round(runner_up[1].r2, 5) == 0.92991
    assert round(corr.rows[tiers.BEST]["mscoco"].r2, 5) == 0.99137
    by_kind = Counter("_".join(n.split("_")[2:]) for n in corr.dropped)
    assert by_kind == {
        "normcount_none": 34, "pplx_prefix0": 33, "pplx_filter0": 20, "count_prefix0": 18,
        "prob_prefix0": 16, "normcount_prefix0": 16, "count_none": 4, "normcount_filter0": 2,
    }


@pytest.mark.data
def test_written_correlations_equal_published_text(table, published, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        corr = correlate(table, "CIDEr")
    write_correlations(tmp_path / "c.txt", corr)
    ours = (tmp_path / "c.txt").read_text().splitlines()
    theirs = (published / "correlations_CIDEr.txt").read_text().splitlines()
    assert ours[0] == theirs[0]
    assert [r.split("\t")[0] for r in ours] == [r.split("\t")[0] for r in theirs]


def _toy_table():
    rng = np.random.default_rng(3)
    keys = [{"dataset": d, "architecture": "init", "run": "1", "num_strata": "1", "stratum": "0"}
            for d in ["a"] * 6 + ["b"] * 6]
    y = rng.uniform(size=12)
    pre = {
        "mean_max_normcount_prefix0": y * 2 + rng.normal(0, 0.01, 12),
        "sum_sum_prob_none": rng.uniform(size=12),
        "sum_sum_pplx_none": np.r_[rng.uniform(size=11), np.inf],  # inf only in group b
        "sum_sum_count_none": np.r_[np.full(6, 3.0), rng.uniform(size=6)],  # constant in a
    }
    return ResultsTable(keys, {"CIDEr": y}, pre)


def test_drop_rule_applies_across_groups():
    t = _toy_table()
    assert dropped_columns(t, ["a", "b", "all"]) == ["sum_sum_pplx_none", "sum_sum_count_none"]
    # only the pooled group: the column constant in "a" varies overall and survives
    assert dropped_columns(t, ["all"]) == ["sum_sum_pplx_none"]
    corr = correlate(t, "CIDEr", ["a", "b", "all"])
    assert list(corr.rows) == ["mean_max_normcount_prefix0", "sum_sum_prob_none"]
    assert corr.top(1)[0][0] == "mean_max_normcount_prefix0"
    assert corr.rows["mean_max_normcount_prefix0"]["all"].r2 > 0.99
    assert "kept:2" in corr.signature() and "a:6+b:6+all:12" in corr.signature()


def test_bad_inputs_are_named():
    t = _toy_table()
    with pytest.raises(InputError, match="SPICE"):
        correlate(t, "SPICE")
    with pytest.raises(InputError, match="'c'"):
        correlate(t, "CIDEr", ["c"])


def test_results_roundtrip(tmp_path):
    t = _toy_table()
    write_results(tmp_path / "data.txt", t)
    text = (tmp_path / "data.txt").read_text()
    assert "\tinf\t" in text
    back = read_results(tmp_path / "data.txt")
    assert back.keys == t.keys
    for name, col in t.pregen.items():
        assert np.array_equal(back.pregen[name], col)
    corr = correlate(back, "CIDEr", ["a", "b", "all"])
    write_correlations(tmp_path / "c.txt", corr)
    groups, rows = read_correlations(tmp_path / "c.txt")
    assert groups == ["a", "b", "all"]
    assert rows["sum_sum_prob_none"]["b"] == corr.rows["sum_sum_prob_none"]["b"]


def test_read_results_reports_bad_cell(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("dataset\tarchitecture\trun\tnum_strata\tstratum\tCIDEr\tsum_sum_prob_none\n"
                 "a\tinit\t1\t1\t0\t0.5\tnope\n")
    with pytest.raises(InputError, match=r"bad.txt:2 column sum_sum_prob_none"):
        read_results(p)


def test_scatter_plot(tmp_path):
    pytest.importorskip("matplotlib")
    out = scatter_plot(_toy_table(), "mean_max_normcount_prefix0", "CIDEr", tmp_path / "s.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 1000
