import itertools

import numpy as np
import pytest
from scipy import stats

from capeval.errors import InputError
from capeval.stats import correlation as C


def _tau_by_hand(x, y):
    """Kendall τ-b and τ-c straight from their definitions (docs/STATISTICS.md) with O(n²) pair
    counting."""
    n = len(x)
    conc = disc = tx = ty = 0
    for i, j in itertools.combinations(range(n), 2):
        dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            tx += 1
        elif dy == 0:
            ty += 1
        elif dx == dy:
            conc += 1
        else:
            disc += 1
    tau_b = (conc - disc) / np.sqrt((conc + disc + tx) * (conc + disc + ty))
    m = min(len(set(x)), len(set(y)))
    tau_c = 2 * (conc - disc) / (n**2 * (m - 1) / m)
    return tau_b, tau_c


def test_protocol_check_values():
    x, y = [1, 2, 2, 3, 4, 4], [1, 1, 2, 3, 3, 4]
    assert C.kendall_tau_c(x, y).value == 0.8148148148148148
    assert C.kendall_tau_b(x, y).value == 0.8461538461538463


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kendall_matches_hand_count(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 5, 40).astype(float)  # human-like ratings with many ties
    y = np.round(rng.random(40) * 3, 1)
    tau_b, tau_c = _tau_by_hand(x, y)
    assert C.kendall_tau_b(y, x).value == pytest.approx(tau_b, abs=1e-12)
    assert C.kendall_tau_c(y, x).value == pytest.approx(tau_c, abs=1e-12)


def test_matches_scipy_exactly():
    rng = np.random.default_rng(7)
    x, y = rng.random(200), rng.random(200) + np.arange(200) / 300
    assert C.pearson(x, y).value == stats.pearsonr(x, y).statistic
    assert C.pearson(x, y).p_value == stats.pearsonr(x, y).pvalue
    assert C.spearman(x, y).value == stats.spearmanr(x, y).statistic
    assert C.kendall_tau_b(x, y).p_value == stats.kendalltau(x, y).pvalue
    assert C.r_squared(x, y).value == pytest.approx(stats.linregress(x, y).rvalue ** 2, abs=1e-14)
    assert C.r_squared(x, y).n == 200


def test_nan_is_named():
    with pytest.raises(InputError, match=r"bleu4\[3\] is NaN"):
        C.correlate([1, 2, 3, np.nan, 5], [1, 2, 3, 4, 5], "pearson", names=("bleu4", "human"))
    with pytest.raises(InputError, match=r"human\[0\] is not a number"):
        C.correlate([1, 2, 3], ["x", 2, 3], names=("m", "human"))


@pytest.mark.parametrize("stat", ["pearson", "r2", "spearman", "kendall_tau_b", "kendall_tau_c"])
@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_infinite_values_refused_by_every_statistic(stat, bad):
    # a rank statistic could rank ±inf, but no score or rating is legitimately infinite
    x = [1.0, 2.0, 3.0, bad]
    with pytest.raises(InputError, match=r"x\[3\] is -?inf"):
        C.correlate(x, [1, 2, 3, 4], stat)
    with pytest.raises(InputError, match=r"y\[0\] is -?inf"):
        C.correlate([1, 2, 3, 4], [bad, 2.0, 3.0, 4.0], stat)


def test_infinite_values_refused_by_bootstrap_and_pairwise():
    from capeval.stats import bootstrap, pairwise

    with pytest.raises(InputError, match=r"human\[2\] is inf"):
        bootstrap.bootstrap_correlation([1.0, 2, 3, 4, 5], [1.0, 2, np.inf, 4, 5], "kendall_tau_c", n_resamples=10)
    with pytest.raises(InputError, match=r"score_a\[0\] is -inf"):
        pairwise.pair_credits([-np.inf, 1.0], [0.5, 0.5], [1, 0])


def test_degenerate_inputs():
    with pytest.raises(InputError, match="constant"):
        C.pearson([1, 1, 1, 1], [1, 2, 3, 4])
    with pytest.raises(InputError, match="align"):
        C.pearson([1, 2, 3], [1, 2, 3, 4])
    with pytest.raises(InputError, match="at least 3"):
        C.pearson([1, 2], [2, 1])


def test_statistic_names():
    assert C.canonical_statistic("tau-c") == "kendall_tau_c"
    assert C.canonical_statistic("Kendall_Tau_B") == "kendall_tau_b"
    with pytest.raises(InputError, match="unknown statistic"):
        C.canonical_statistic("kappa")


def test_signature_names_statistic():
    sig = str(C.kendall_tau_c([1, 2, 3, 4], [1, 3, 2, 4]).signature())
    assert sig.startswith("corr|stat:tau-c|n:4|version:")


@pytest.mark.parametrize("statistic", C.STATISTICS)
def test_batched_equals_single(statistic):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, (5, 30)).astype(float)
    y = rng.random((5, 30))
    got = C.batched(statistic)(x, y)
    want = [C.correlate(a, b, statistic).value for a, b in zip(x, y)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_correlation_matrix():
    rng = np.random.default_rng(4)
    s = {"a": rng.random(50), "b": rng.random(50), "c": rng.random(50)}
    names, m = C.correlation_matrix(s, "spearman")
    assert names == ["a", "b", "c"]
    assert np.allclose(m, m.T) and np.all(np.diag(m) == 1)
    assert m[0, 2] == stats.spearmanr(s["a"], s["c"]).statistic
