"""A user metric's numbers are read in the candidates' order, and each name is one metric (issue
41, item 6): a pandas Series whose labels are not 0..n-1 in order would be read by position,
not label, and two callables sharing a ``__name__`` would register one over the other."""
from __future__ import annotations

import numpy as np
import pytest

import capeval
from capeval.errors import InputError
from capeval.metrics.user import checked_scores

pd = pytest.importorskip("pandas")

CANDS = ["a dog runs", "a cat", "two birds fly away"]
REFS = [["a dog is running"], ["a cat sits"], ["birds flying"]]


def test_a_series_with_a_shuffled_index_is_refused_naming_the_metric():
    def lengths(candidates, references, images):
        s = pd.Series([float(len(c)) for c in candidates])
        return s.sample(frac=1.0, random_state=3)  # labels 2, 0, 1: the values of those rows

    with pytest.raises(InputError, match=r"'lengths'.*index is \[.*not 0..n-1 in order"):
        capeval.score(CANDS, REFS, [lengths])


@pytest.mark.parametrize("index", [["a", "b", "c"], [1, 2, 3], [0, 2, 1]])
def test_any_other_index_is_refused(index):
    with pytest.raises(InputError, match="not 0..n-1"):
        checked_scores(pd.Series([1.0, 2.0, 3.0], index=index), 3, "m")


def test_a_series_in_order_and_a_plain_array_are_read():
    def lengths(candidates, references, images):
        return pd.Series([float(len(c)) for c in candidates])

    got = capeval.score(CANDS, REFS, [lengths]).per_caption["lengths"]
    assert got.tolist() == [float(len(c)) for c in CANDS]
    assert checked_scores(np.array([1.0, 2.0, 3.0]), 3, "m").tolist() == [1.0, 2.0, 3.0]
    assert checked_scores(pd.Series([1.0, 2.0], index=[1, 0]).sort_index(), 2, "m").tolist() == [2.0, 1.0]


def _named(value: float):
    def score(candidates, references, images):
        return [value] * len(candidates)
    return score


def test_two_callables_with_one_name_are_refused_naming_it():
    with pytest.raises(InputError, match="two metrics are named 'score'"):
        capeval.score(CANDS, REFS, [_named(1.0), _named(2.0)])
    with pytest.raises(InputError, match="two metrics are named 'score'"):
        capeval.ScoringPlan.build(["bleu4", _named(1.0), _named(2.0)])


def test_the_same_callable_twice_and_renamed_callables_score():
    one = _named(1.0)
    r = capeval.score(CANDS, REFS, [one, "bleu1"])
    assert r.corpus["score"] == 1.0
    from capeval.metrics.user import from_callable

    r = capeval.score(CANDS, REFS, [from_callable(_named(1.0), "one"), from_callable(_named(2.0), "two")])
    assert (r.corpus["one"], r.corpus["two"]) == (1.0, 2.0)
