import math

import numpy as np
import pytest
from scipy import stats

from capeval.errors import InputError
from capeval.stats.williams import degrees_of_freedom, williams_from_scores, williams_matrix, williams_test


def _by_hand(r12, r13, r23, n, df):
    # Graham & Baldwin (2014), the Williams test's equation, typed out independently.
    K = 1 - r12 * r12 - r13 * r13 - r23 * r23 + 2 * r12 * r13 * r23
    num = (n - 1) * (1 + r23)
    den = 2 * K * (n - 1) / (n - 3) + (r12 + r13) ** 2 / 4 * (1 - r23) ** 3
    t = (r12 - r13) * math.sqrt(num / den)
    return t, 1 - stats.t.cdf(t, df)


def test_oracle_values():
    res = williams_test(0.65, 0.55, 0.3, 50)
    # r**2 and (1 - r23)**3 go through the C library's pow, whose last bit may depend on the CPU
    assert res.t == pytest.approx(0.8160781865467162, rel=8 * 2.0 ** -52)
    assert res.k == pytest.approx(0.3995, abs=1e-15)
    assert res.df == 47 and res.df_rule == "n-3"
    assert res.p_value == pytest.approx(0.20928617286753579, abs=1e-15)
    res2 = williams_test(0.65, 0.55, 0.3, 50, df="n-2")
    assert res2.df == 48
    assert res2.p_value == pytest.approx(0.20924348296400863, abs=1e-15)


@pytest.mark.parametrize("r12,r13,r23,n", [(0.65, 0.55, 0.3, 50), (0.41, 0.32, 0.8, 5664),
                                           (0.2, 0.25, -0.1, 30), (0.9, 0.1, 0.05, 12)])
@pytest.mark.parametrize("df", ["n-3", "n-2"])
def test_matches_formula(r12, r13, r23, n, df):
    res = williams_test(r12, r13, r23, n, df=df)
    t, p = _by_hand(r12, r13, r23, n, n - 3 if df == "n-3" else n - 2)
    assert res.t == pytest.approx(t, rel=1e-13)
    assert res.p_value == pytest.approx(p, rel=1e-9, abs=1e-15)
    assert isinstance(res.t, float)


def test_direction():
    assert williams_test(0.55, 0.65, 0.3, 50).p_value > 0.5
    assert williams_test(0.55, 0.65, 0.3, 50).t == -williams_test(0.65, 0.55, 0.3, 50).t


def test_from_scores_uses_pearson():
    rng = np.random.default_rng(0)
    h = rng.random(80)
    a = h + rng.normal(0, 0.3, 80)
    b = h + rng.normal(0, 0.6, 80)
    res = williams_from_scores(h, a, b, df="n-2")
    r = np.corrcoef([h, a, b])
    t, p = _by_hand(r[0, 1], r[0, 2], r[1, 2], 80, 78)
    assert res.t == pytest.approx(t, rel=1e-10) and res.p_value == pytest.approx(p, rel=1e-8)


def test_signature_has_df():
    sig = str(williams_test(0.65, 0.55, 0.3, 50).signature())
    assert "df:n-3=47" in sig and "tail:one" in sig


@pytest.mark.parametrize("args,msg", [((1.2, 0.5, 0.3, 50), "r12"), ((0.5, 0.5, 0.3, 3), "n > 3"),
                                      ((0.99, -0.99, 0.99, 50), "determinant")])
def test_bad_input(args, msg):
    with pytest.raises(InputError, match=msg):
        williams_test(*args)
    with pytest.raises(InputError, match="df rule"):
        williams_test(0.6, 0.5, 0.3, 50, df="n-1")


def test_williams_matrix_refuses_bad_input_before_testing():
    rng = np.random.default_rng(3)
    h, a, b = rng.normal(size=(3, 40))
    with pytest.raises(InputError, match="unknown df rule"):
        williams_matrix({"a": a, "b": b}, h, df="n-4")
    with pytest.raises(InputError, match="inputs must align"):
        williams_matrix({"a": a, "b": b[:-1]}, h)
    with pytest.raises(InputError):
        williams_matrix({"a": np.where(np.arange(40) == 5, np.nan, a), "b": b}, h)
    names, p = williams_matrix({"a": a, "b": b}, h, df="n-2")
    assert names == ["a", "b"] and p[0, 1] == williams_from_scores(h, a, b, df="n-2").p_value
    assert degrees_of_freedom(40, "n-3") == 37 and degrees_of_freedom(40, "n-2") == 38
