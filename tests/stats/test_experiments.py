import numpy as np
import pytest

from capeval.data.records import CorrelationTable, PairwiseTable, SystemTable
from capeval.errors import InputError
from capeval.stats import experiments as E
from capeval.stats.correlation import correlate
from capeval.stats.williams import williams_from_scores


def _corr_table(n=30):
    rng = np.random.default_rng(1)
    return CorrelationTable(
        name="toy", candidates=[f"cap {i}" for i in range(n)], references=[["ref a", "ref b"]] * n,
        human=rng.integers(1, 5, n).astype(float), groups=[str(i // 3) for i in range(n)],
        statistic="kendall_tau_c", protocol={"dataset": "toy", "rows": str(n)},
    )


def test_correlation_experiment():
    t = _corr_table()
    m = np.arange(30, dtype=float) % 7
    exp = E.correlation_experiment(t, {"bleu4": m})
    assert set(exp.results["bleu4"]) == set(E.CORRELATION_STATISTICS)
    assert exp.results["bleu4"]["kendall_tau_c"].value == correlate(m, t.human, "tau-c").value
    with pytest.raises(InputError, match="bleu4 has 29 scores"):
        E.correlation_experiment(t, {"bleu4": m[:-1]})


def test_pairwise_units_and_experiment():
    t = PairwiseTable(name="pairs", candidates_a=["a0", "a1", "a2"], candidates_b=["b0", "b1", "b2"],
                      references=[["r0"], ["r1"], ["r2"]], labels=np.array([0, 1, 1]),
                      categories=["HC", "HI", "HI"], protocol={"dataset": "pairs"})
    cands, refs = E.pairwise_units(t)
    assert cands == ["a0", "a1", "a2", "b0", "b1", "b2"]
    assert refs[4] == ["r1"] and len(refs) == 6
    exp = E.pairwise_experiment(t, {"m": [0.9, 0.1, 0.5, 0.1, 0.2, 0.5]})
    acc = exp.results["m"]
    assert acc.accuracy == {"HC": 1.0, "HI": 0.75} and acc.ties["HI"] == 1
    assert exp.categories == ["HC", "HI"]
    with pytest.raises(InputError, match="expected 6 unit scores"):
        E.pairwise_experiment(t, {"m": [1, 2, 3]})


def test_system_experiment():
    systems = {f"s{i}": [f"c{i}{j}" for j in range(2)] for i in range(4)}
    t = SystemTable(name="sys", systems=systems, references=[["r"], ["q"]], image_ids=["i0", "i1"],
                    human={"s0": 0.1, "s1": 0.2, "s2": 0.3, "s3": 0.4}, protocol={"dataset": "sys"})
    scores = {"cider_d": {"s0": 1.0, "s1": 2.0, "s2": 3.0, "s3": 5.0},
              "bleu4": {"s0": 0.4, "s1": 0.3, "s2": 0.2, "s3": 0.1}}
    exp = E.system_experiment(t, scores)
    assert exp.vs_human["cider_d"].correlations["kendall_tau_b"].value == pytest.approx(1.0)
    assert exp.rankings["bleu4"] == ["s0", "s1", "s2", "s3"]
    assert exp.metric_matrix[1][0, 1] == pytest.approx(-1.0)
    with pytest.raises(InputError, match="no score for system 's3'"):
        E.system_experiment(t, {"m": {"s0": 1, "s1": 2, "s2": 3}})


def test_undefined_rows_are_skipped_only_when_declared():
    """SPICE's category F is NaN where the references lack the category (issue 9): the bench
    skips those rows for that metric only, and counts them; NaN elsewhere stays an error."""
    t = _corr_table()
    m = np.arange(30, dtype=float) % 7
    m[[2, 5, 11]] = np.nan
    with pytest.raises(InputError, match=r"spice_color\[2\] is NaN"):
        E.correlation_experiment(t, {"spice_color": m})
    exp = E.correlation_experiment(t, {"spice_color": m, "bleu4": np.arange(30.0)},
                                   skip_undefined={"spice_color"})
    keep = ~np.isnan(m)
    want = correlate(m[keep], t.human[keep], "tau-c")
    got = exp.results["spice_color"]["kendall_tau_c"]
    assert got.value == want.value and got.n == 27
    assert exp.defined == {"spice_color": 27} and exp.results["bleu4"]["kendall_tau_c"].n == 30


def test_undefined_pairs_are_skipped():
    t = PairwiseTable(name="pairs", candidates_a=["a0", "a1", "a2", "a3"], candidates_b=["b0", "b1", "b2", "b3"],
                      references=[["r0"], ["r1"], ["r2"], ["r3"]], labels=np.array([0, 1, 1, 0]),
                      categories=["HC", "HI", "HI", "HC"], protocol={"dataset": "pairs"})
    nan = float("nan")
    scores = [0.9, nan, 0.5, 0.1, 0.1, nan, 0.2, 0.5]  # pair 1 undefined; pair 3 wrong
    with pytest.raises(InputError, match="NaN"):
        E.pairwise_experiment(t, {"m": scores})
    exp = E.pairwise_experiment(t, {"m": scores}, skip_undefined={"m"})
    acc = exp.results["m"]
    assert exp.defined == {"m": 3}
    assert acc.n == {"HC": 2, "HI": 1} and acc.accuracy == {"HC": 0.5, "HI": 0.0}
    with pytest.raises(InputError, match="undefined"):
        E.pairwise_experiment(t, {"m": [nan] * 8}, skip_undefined={"m"})


def test_metric_agreement_leaves_out_undefined_outputs():
    rng = np.random.default_rng(4)
    h = rng.normal(size=50)
    scores = {"a": h + rng.normal(size=50), "b": h + rng.normal(size=50), "c": rng.normal(size=50)}
    scores["spice_color"] = np.where(np.arange(50) % 7 == 0, np.nan, h)
    agr = E.metric_agreement(scores, h, statistic="tau-b", df="n-2")
    assert agr.names == ["a", "b", "c"] and agr.statistic == "kendall_tau_b" and agr.n == 50
    assert agr.matrix[0, 1] == correlate(scores["a"], scores["b"], "kendall_tau_b").value
    assert agr.williams_p[0, 2] == williams_from_scores(h, scores["a"], scores["c"], df="n-2").p_value
    assert str(agr.williams_signature("toy")).startswith("williams|dataset:toy|corr:pearson|tail:one|df:n-2=48|n:50|")
    assert str(agr.signature("toy")).startswith("toy-metric-agreement|stat:tau-b|n:50|")
    assert E.metric_agreement({"a": scores["a"], "spice_color": scores["spice_color"]}, h) is None
    with pytest.raises(InputError, match="unknown df rule"):
        E.metric_agreement(scores, h, df="n")
