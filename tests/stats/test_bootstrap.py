import numpy as np
import pytest
from scipy import stats

from capeval.errors import InputError
from capeval.stats import bootstrap as B


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    h = rng.integers(1, 5, 300).astype(float)
    good = h + rng.normal(0, 1.0, 300)
    bad = h + rng.normal(0, 3.0, 300)
    return h, good, bad


def test_defaults_are_sacrebleus():
    assert (B.DEFAULT_RESAMPLES, B.DEFAULT_SEED) == (1000, 12345)


def test_reproducible_by_seed(data):
    h, good, _ = data
    a = B.bootstrap_correlation(good, h, "pearson", n_resamples=200, seed=5)
    b = B.bootstrap_correlation(good, h, "pearson", n_resamples=200, seed=5)
    c = B.bootstrap_correlation(good, h, "pearson", n_resamples=200, seed=6)
    assert a == b
    assert (a.low, a.high) != (c.low, c.high)
    assert a.low < a.value < a.high
    assert "bs:200|rs:5" in str(a.signature())


def test_vectorised_equals_loop(data):
    h, good, _ = data
    n, reps, seed = len(h), 50, 3
    idx = np.random.default_rng(seed).integers(0, n, size=(reps, n))
    loop = [stats.pearsonr(good[i], h[i]).statistic for i in idx]
    vec = B.bootstrap_distribution(B.batched("pearson"), (good, h), reps, seed)
    np.testing.assert_allclose(vec, loop, rtol=0, atol=1e-12)
    tau = B.bootstrap_distribution(B.batched("kendall_tau_c"), (good, h), 20, seed)
    loop_tau = [stats.kendalltau(good[i], h[i], variant="c").statistic for i in idx[:20]]
    np.testing.assert_allclose(tau, loop_tau, rtol=0, atol=1e-12)


def test_chunking_does_not_change_numbers(data):
    h, good, _ = data
    big = B.bootstrap_distribution(B.batched("spearman"), (good, h), 37, 9)
    small = B.bootstrap_distribution(B.batched("spearman"), (good, h), 37, 9, chunk_cells=len(h) * 4)
    np.testing.assert_array_equal(big, small)


def test_strata_keep_sizes():
    strata = ["x"] * 5 + ["y"] * 3
    for idx in B.resample_indices(8, 10, 1, strata=strata):
        assert np.all(idx[:, :5] < 5) and np.all(idx[:, 5:] >= 5)


def test_paired(data):
    h, good, bad = data
    res = B.paired_bootstrap_correlation(good, bad, h, "kendall_tau_b", n_resamples=200, seed=1)
    assert res.delta > 0 and res.low > 0
    assert res.p_value < 0.01 and res.a_better > 0.99
    same = B.paired_bootstrap_correlation(good, good, h, "pearson", n_resamples=100)
    assert same.delta == 0 and same.p_value == 1.0


def test_paired_p_is_two_sided(data):
    h, good, bad = data
    ab = B.paired_bootstrap_correlation(good, bad, h, "pearson", n_resamples=300, seed=2)
    ba = B.paired_bootstrap_correlation(bad, good, h, "pearson", n_resamples=300, seed=2)
    assert ab.p_value == ba.p_value and ab.delta == -ba.delta


def test_bad_input(data):
    h, good, _ = data
    with pytest.raises(InputError, match="positive"):
        B.bootstrap_correlation(good, h, n_resamples=0)
    with pytest.raises(InputError, match="level"):
        B.bootstrap_correlation(good, h, "pearson", n_resamples=5, level=95)
    bad = good.copy()
    bad[17] = np.nan
    with pytest.raises(InputError, match=r"metric\[17\]"):
        B.bootstrap_correlation(bad, h)


@pytest.mark.parametrize("variant", ["b", "c"])
def test_weighted_kendall_equals_scipy_on_resamples(variant):
    from capeval.stats._kendall import WeightedKendall, weights_from_indices

    rng = np.random.default_rng(21)
    n = 400
    h = rng.integers(1, 5, n).astype(float)  # few levels, like expert ratings
    m = np.round(rng.random(n) * h, 1)  # ties within and across levels
    idx = rng.integers(0, n, (30, n))
    got = WeightedKendall(m, h, variant)(weights_from_indices(idx, n))
    want = [stats.kendalltau(m[i], h[i], variant=variant).statistic for i in idx]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)
    # either argument order, since τ is symmetric
    np.testing.assert_allclose(WeightedKendall(h, m, variant)(weights_from_indices(idx, n)), want, atol=1e-13)


def test_kendall_bootstrap_uses_same_resamples_as_loop():
    rng = np.random.default_rng(5)
    n = 300
    h = rng.integers(1, 4, n).astype(float)
    m = h + rng.normal(0, 1, n)
    ci = B.bootstrap_correlation(m, h, "tau-c", n_resamples=40, seed=8)
    idx = np.random.default_rng(8).integers(0, n, (40, n))
    loop = np.array([stats.kendalltau(m[i], h[i], variant="c").statistic for i in idx])
    lo, hi = np.quantile(loop, [0.025, 0.975])
    assert ci.low == pytest.approx(lo, abs=1e-12) and ci.high == pytest.approx(hi, abs=1e-12)
    assert ci.std == pytest.approx(loop.std(ddof=1), abs=1e-12)
