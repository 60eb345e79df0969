import numpy as np
import pytest
from scipy import stats

from capeval.errors import InputError
from capeval.stats import system as S


def test_system_correlation_and_rankings():
    systems = [f"sys{i}" for i in range(12)]
    rng = np.random.default_rng(2)
    human = dict(zip(systems, rng.random(12)))
    metric = {s: human[s] + rng.normal(0, 0.1) for s in systems}
    res = S.system_correlation(metric, human, names=("cider_d", "human"))
    x, y = [metric[s] for s in systems], [human[s] for s in systems]
    assert res.correlations["pearson"].value == stats.pearsonr(x, y).statistic
    assert res.correlations["kendall_tau_b"].value == stats.kendalltau(x, y).statistic
    assert res.correlations["spearman"].n == 12
    ranks = S.system_rankings({"cider_d": metric, "ter": metric}, higher_is_better={"ter": False})
    assert ranks["cider_d"][0] == max(metric, key=metric.get)
    assert ranks["ter"] == ranks["cider_d"][::-1]


def test_unaligned_systems_are_named():
    with pytest.raises(InputError, match="system 'c'"):
        S.system_correlation({"a": 1, "b": 2, "c": 3, "d": 0}, {"a": 1, "b": 2, "d": 3})


def test_metric_matrix():
    scores = {"m1": {"a": 1, "b": 2, "c": 3, "d": 4}, "m2": {"a": 4, "b": 3, "c": 2, "d": 1}}
    names, m = S.system_metric_matrix(scores)
    assert names == ["m1", "m2"] and m[0, 1] == pytest.approx(-1.0)
