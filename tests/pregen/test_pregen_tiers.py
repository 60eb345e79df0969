import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._budget import examples

from capeval.errors import InputError
from capeval.pregen import tiers
from capeval.pregen.tokens import TokenScores
from ._reference_loops import reference_value


def test_names_count_and_order():
    names = tiers.column_names()
    assert len(names) == 504 == len(set(names))
    assert names[:4] == ["sum_sum_prob_none", "sum_sum_prob_filter0", "sum_sum_prob_prefix0", "sum_sum_pplx_none"]
    assert names[-1] == "min_join_normcount_prefix0"
    assert tiers.BEST in names


@pytest.mark.data
def test_names_equal_published_header(data_dir):
    header = (data_dir / "pregen_tanti2018/results/data.txt").open().readline().rstrip("\n").split("\t")
    assert header[9:] == tiers.column_names()


def test_parse_name_rejects_unknown():
    assert tiers.parse_name("mean_max_normcount_prefix0") == ("mean", "max", "normcount", "prefix0")
    with pytest.raises(InputError, match="mean_max_normcount_prefix1"):
        tiers.parse_name("mean_max_normcount_prefix1")


def _random_nested(rng, n_images, zero_rate=0.05):
    images = []
    for _ in range(n_images):
        caps = []
        for _ in range(int(rng.integers(1, 8))):
            T = int(rng.integers(1, 14))
            probs = rng.uniform(0, 1, T).astype(np.float32).astype(float)
            probs[rng.uniform(size=T) < zero_rate] = 0.0
            ranks = np.where(rng.uniform(size=T) < 0.55, 0, rng.integers(1, 50, T))
            caps.append([(float(p), int(r)) for p, r in zip(probs, ranks)])
        images.append(caps)
    return images


def test_all_504_bit_identical_to_loop_reference():
    rng = np.random.default_rng(7)
    nested = _random_nested(rng, 60)
    got = tiers.compute(TokenScores.from_nested(nested))
    assert list(got) == tiers.column_names()
    diffs = [n for n, v in got.items() if v != reference_value(nested, n)]
    assert diffs == []
    # the random data must exercise both edge values, or the comparison proves little
    assert any(math.isinf(v) for v in got.values()) and any(v == 0.0 for v in got.values())


@settings(max_examples=examples(12), deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.sampled_from([0.0, 0.2]))
def test_random_corpora_match_reference(seed, n_images, zero_rate):
    rng = np.random.default_rng(seed)
    nested = _random_nested(rng, n_images, zero_rate)
    got = tiers.compute(TokenScores.from_nested(nested))
    for name in got:
        assert got[name] == reference_value(nested, name), name


def test_edge_cases_by_hand():
    # image 0: caption A misses the first word (prefix0 empty), caption B is all argmax
    # (filter0 empty); image 1: a zero probability.
    a = [(0.5, 3), (0.25, 0), (0.5, 0)]
    b = [(0.5, 0), (0.5, 0)]
    c = [(0.0, 0), (0.5, 2)]
    ts = TokenScores.from_nested([[a, b], [c]])
    caps = tiers.caption_scores(ts)
    assert caps[("count", "prefix0")].tolist() == [0, 2, 1]
    assert caps[("normcount", "prefix0")].tolist() == [0.0, 1.0, 0.5]
    assert caps[("prob", "prefix0")].tolist() == [0.0, 0.25, 0.0]
    assert caps[("pplx", "prefix0")].tolist() == [math.inf, 2.0, math.inf]
    assert caps[("count", "filter0")].tolist() == [1, 0, 1]
    assert caps[("prob", "filter0")].tolist() == [0.5, 0.0, 0.5]
    assert caps[("pplx", "filter0")].tolist() == [2.0, math.inf, 2.0]
    assert caps[("prob", "none")].tolist() == [0.0625, 0.25, 0.0]
    assert caps[("pplx", "none")].tolist() == [pytest.approx(2 ** (4 / 3)), 2.0, math.inf]
    assert caps[("normcount", "none")].tolist() == [1.0, 1.0, 1.0]
    v = tiers.compute(ts)
    assert v["mean_max_normcount_prefix0"] == 0.75  # max(0, 1) and 0.5, averaged
    assert v["sum_join_count_none"] == 7
    assert v["median_join_count_prefix0"] == 1.0
    # geomean: a zero anywhere gives 0.0 (not NaN); an inf gives inf
    assert v["geomean_max_prob_none"] == 0.0
    assert v["geomean_join_pplx_prefix0"] == math.inf  # [inf, 2, inf]
    assert v["geomean_join_prob_prefix0"] == 0.0  # [0, 0.25, 0]
    assert v["sum_geomean_pplx_filter0"] == math.inf
    assert v["geomean_min_normcount_prefix0"] == 0.0
    assert v["geomean_mean_normcount_none"] == 1.0
    assert not any(math.isnan(x) for x in v.values())


def test_geomean_definition():
    assert tiers.geomean(np.array([2.0, 8.0])) == 4.0
    assert tiers.geomean(np.array([0.0, 8.0])) == 0.0
    assert tiers.geomean(np.array([np.inf, 8.0])) == math.inf
    assert tiers.geomean(np.array([np.inf, 0.0])) == 0.0


def test_subset_of_names_in_requested_order():
    rng = np.random.default_rng(1)
    ts = TokenScores.from_nested(_random_nested(rng, 5))
    full = tiers.compute(ts)
    names = ["min_join_prob_none", tiers.BEST]
    assert tiers.compute(ts, names) == {n: full[n] for n in names}
