import numpy as np
import pytest

from capeval.errors import InputError
from capeval.pregen.stratify import image_order, strata


def test_strata_sizes_and_leftover_rule():
    rng = np.random.default_rng(0)
    scores = rng.permutation(1000).astype(float)
    order = image_order(scores)
    assert scores[order].tolist() == sorted(scores)
    st = strata(order)
    assert [(s.num_strata, s.stratum) for s in st][:4] == [(1, 0), (2, 0), (2, 1), (3, 0)]
    assert len(st) == 15
    three = [s for s in st if s.num_strata == 3]
    assert [len(s.indices) for s in three] == [333, 333, 333]
    used = np.concatenate([s.indices for s in three])
    # the single leftover image is the best one (highest CIDEr)
    assert set(range(1000)) - set(used.tolist()) == {int(np.argmax(scores))}
    # strata are contiguous in the ranking, lowest first
    assert scores[three[0].indices].max() < scores[three[1].indices].min()


def test_ties_keep_input_order_when_stable():
    order = image_order([0.0, 1.0, 0.0, 0.0])
    assert order.tolist() == [0, 2, 3, 1]


def test_errors():
    with pytest.raises(InputError, match="image 1"):
        image_order([0.0, float("nan")])
    with pytest.raises(InputError):
        strata(np.arange(3), 5)
