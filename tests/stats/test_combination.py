import numpy as np
import pytest

from capeval.errors import InputError
from capeval.stats import combination as K
from capeval.stats.correlation import kendall_tau_c


def test_normalize():
    x = np.array([1.0, 2.0, 4.0, 9.0])
    z = K.normalize(x, "z")
    assert z.mean() == pytest.approx(0, abs=1e-15) and z.std() == pytest.approx(1)
    mm = K.normalize(x, "minmax")
    assert mm.min() == 0 and mm.max() == 1 and mm[1] == pytest.approx(1 / 8)
    with pytest.raises(InputError, match="constant"):
        K.normalize([2, 2, 2], what="spice")
    with pytest.raises(InputError, match="normalisation"):
        K.normalize(x, "rank")


def test_combine_flips_error_metrics():
    s = {"a": [1.0, 2.0, 3.0], "ter": [3.0, 2.0, 1.0]}
    both = K.combine(s, ["a", "ter"], "minmax", higher_is_better={"ter": False})
    np.testing.assert_allclose(both, 2 * K.normalize(s["a"], "minmax") - 1)
    with pytest.raises(InputError, match="'wmd'"):
        K.combine(s, ["a", "wmd"])


def test_search_finds_complementary_metrics():
    rng = np.random.default_rng(0)
    n = 600
    h = rng.normal(size=n)
    # each metric sees human quality plus its own independent error, so sums average it out
    scores = {m: h + rng.normal(0, 1.2, n) for m in ("meteor", "spice", "wmd")}
    scores["bleu4"] = 0.1 * h + rng.normal(0, 1, n) + 50  # different scale, weak
    res = K.search_combinations(scores, h, sizes=(2, 3), method="z", statistic="kendall_tau_c")
    assert len(res.combinations) == 6 + 4
    best = res.combinations[0]
    assert set(best.metrics) == {"meteor", "spice", "wmd"}
    assert best.value > max(c.value for c in res.singles)
    assert best.williams is not None and best.williams.p_value < 0.01
    assert best.williams.df == n - 3
    want = kendall_tau_c(K.combine(scores, best.metrics, "z"), h).value
    assert best.value == want
    assert res.singles[0].metrics == (res.best_single,) and res.singles[0].williams is None
    only = K.search_combinations(scores, h, combos=[("wmd", "spice", "meteor")], method="minmax")
    assert [c.name for c in only.combinations] == ["wmd+spice+meteor"]
    # the fields a report records beside the table's protocol (short statistic name, df rule)
    assert only.signature_fields() == {"stat": "tau-c", "norm": "minmax", "test": "williams-pearson", "df": "n-3"}
