import numpy as np
import pytest

from capeval.errors import InputError
from capeval.stats import pairwise as P

# pairs:        0    1    2    3    4    5
A = np.array([0.9, 0.2, 0.5, 0.5, 0.7, 0.1])
Bs = np.array([0.1, 0.8, 0.5, 0.5, 0.3, 0.1])
LAB = np.array([0, 1, 0, 1, 1, 0.5])
CAT = ["HC", "HC", "HI", "HI", "MM", "MM"]


def test_half_policy():
    res = P.pairwise_accuracy(A, Bs, LAB, CAT)
    # credits: 1, 1, .5 (tie), .5 (tie), 0, .5 (human tie)
    assert res.accuracy == {"HC": 1.0, "HI": 0.5, "MM": 0.25}
    assert res.mean == pytest.approx((1.0 + 0.5 + 0.25) / 3)
    assert res.overall == pytest.approx(3.5 / 6)
    assert res.ties == {"HC": 0, "HI": 2, "MM": 1} and res.total_ties == 3
    assert res.n == {"HC": 2, "HI": 2, "MM": 2}
    assert res.percent()["HI"] == 50.0
    assert "ties:half" in str(res.signature())


def test_b_policy_is_polos_rule():
    res = P.pairwise_accuracy(A, Bs, LAB, CAT, tie_policy="b")
    pred = np.where(A > Bs, 0, 1)  # Polos compute_pascal50s.py:73-75
    want = 1 - np.abs(pred - LAB)
    np.testing.assert_array_equal(res.credits, want)
    assert res.accuracy["HI"] == 0.5  # tie→B: wrong on pair 2, right on pair 3


def test_fail_policy():
    res = P.pairwise_accuracy(A, Bs, LAB, CAT, tie_policy="fail")
    np.testing.assert_array_equal(res.credits, [1, 1, 0, 0, 0, 0.5])  # human tie stays 0.5


def test_random_policy_seeded():
    many_a, many_b = np.zeros(200), np.zeros(200)
    lab = np.zeros(200)
    r1 = P.pairwise_accuracy(many_a, many_b, lab, tie_policy="random", seed=3)
    r2 = P.pairwise_accuracy(many_a, many_b, lab, tie_policy="random", seed=3)
    r3 = P.pairwise_accuracy(many_a, many_b, lab, tie_policy="random", seed=4)
    np.testing.assert_array_equal(r1.credits, r2.credits)
    assert not np.array_equal(r1.credits, r3.credits)
    assert set(np.unique(r1.credits)) == {0.0, 1.0}
    assert 0.35 < r1.overall < 0.65
    assert "tie_seed:3" in str(r1.signature())


def test_lower_is_better():
    res = P.pairwise_accuracy([1.0, 3.0], [2.0, 1.0], [0, 1], higher_is_better=False)
    assert res.overall == 1.0


def test_distractor():
    true, foil = np.array([0.5, 0.2, 0.3]), np.array([0.1, 0.4, 0.3])
    res = P.distractor_accuracy(true, foil)
    assert res.overall == pytest.approx(1.5 / 3) and res.total_ties == 1
    assert P.distractor_accuracy(true, foil, tie_policy="fail").overall == pytest.approx(1 / 3)


@pytest.mark.parametrize("kw,msg", [({"labels": [0, 2, 1, 0, 0, 0]}, r"labels\[1\]"),
                                    ({"tie_policy": "coin"}, "tie policy")])
def test_bad_input(kw, msg):
    args = {"labels": LAB, **kw}
    with pytest.raises(InputError, match=msg):
        P.pairwise_accuracy(A, Bs, args.pop("labels"), CAT, **args)
    bad = A.copy()
    bad[4] = np.nan
    with pytest.raises(InputError, match=r"score_a\[4\]"):
        P.pairwise_accuracy(bad, Bs, LAB)


def test_bootstrap_accuracy():
    rng = np.random.default_rng(0)
    a, b = rng.random(400), rng.random(400)
    lab = (b > a + rng.normal(0, 0.2, 400)).astype(float)
    cats = np.repeat(["HC", "HI", "HM", "MM"], 100)
    res = P.pairwise_accuracy(a, b, lab, cats)
    ci = P.bootstrap_accuracy(res, n_resamples=300, seed=1)
    assert ci == P.bootstrap_accuracy(res, n_resamples=300, seed=1)
    assert ci.low < res.mean < ci.high
    # each category keeps its 100 pairs, so a per-category constant credit has zero spread
    const = P.pairwise_accuracy(np.r_[np.ones(100), a[100:]], np.r_[np.zeros(100), b[100:]],
                                np.r_[np.zeros(100), lab[100:]], cats)
    assert const.accuracy["HC"] == 1.0
    worse = P.pairwise_accuracy(a + rng.normal(0, 0.5, 400), b, lab, cats)
    cmp = P.paired_bootstrap_accuracy(res, worse, n_resamples=300, seed=1)
    assert cmp.delta == pytest.approx(res.mean - worse.mean) and cmp.delta > 0 and cmp.p_value < 0.05
