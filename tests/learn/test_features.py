import numpy as np
import pytest

import capeval
from capeval.service.cache import ScoreCache
from capeval.errors import InputError, UnknownMetricError
from capeval.learn.features import (NNEVAL_FEATURES, Feature, MinMax, extract, label, parse_features)

CANDS = ["a dog runs on the grass", "a man rides a red bike", "two cats sleep on a sofa", "a dog runs"]
REFS = [["a dog is running on grass", "the dog runs in a field"],
        ["a man riding a bike", "a person on a red bicycle"],
        ["two cats sleeping on a couch", "cats lying on a sofa"],
        ["a brown dog running", "a dog runs fast"]]


def test_nneval_preset_is_the_papers_order():
    assert [label(f) for f in NNEVAL_FEATURES] == [
        "meteor", "wmd(norm=True)", "bleu1", "bleu2", "bleu3", "bleu4", "spice", "cider_d/10"]


def test_parse_features():
    fs = parse_features("nneval+rouge_l+length")
    assert fs[:8] == NNEVAL_FEATURES and [f.metric for f in fs[8:]] == ["rouge_l", "length"]
    assert [f.metric for f in parse_features(["bleu4", "cider_d"])] == ["bleu4", "cider_d"]
    with pytest.raises(InputError, match="twice"):
        parse_features("nneval+bleu1")
    with pytest.raises(InputError, match="no features"):
        parse_features(" + ")
    with pytest.raises(UnknownMetricError, match="unknown metric 'blue4'"):
        parse_features("nneval+blue4")


def test_columns_are_the_registered_metrics_scaled():
    feats = (Feature("bleu1"), Feature("bleu4"), Feature("cider_d", scale=0.1), Feature("rouge_l"),
             Feature("length"))
    fm = extract(CANDS, REFS, feats)
    ref = capeval.score(CANDS, REFS, ["bleu1", "bleu4", "cider_d", "rouge_l"])
    np.testing.assert_array_equal(fm.X[:, 0], ref.per_caption["bleu1"])
    np.testing.assert_array_equal(fm.X[:, 1], ref.per_caption["bleu4"])
    np.testing.assert_array_equal(fm.X[:, 2], ref.per_caption["cider_d"] * 0.1)
    np.testing.assert_array_equal(fm.X[:, 3], ref.per_caption["rouge_l"])
    np.testing.assert_array_equal(fm.X[:, 4], [6, 6, 6, 3])
    assert fm.signatures["cider_d/10"] == ref.signatures["cider_d"]


def test_feature_columns_are_cached_by_content(tmp_path):
    feats = (Feature("bleu2"), Feature("cider_d", scale=0.1))
    cache = ScoreCache(tmp_path)
    first = extract(CANDS, REFS, feats, cache=cache)
    again = extract(CANDS, REFS, feats, cache=cache)
    assert not any(first.cached.values()) and all(again.cached.values())
    np.testing.assert_array_equal(first.X, again.X)
    other = extract(CANDS[::-1], REFS[::-1], feats, cache=cache)
    assert not any(other.cached.values())


def test_minmax_maps_training_range_to_minus_one_one():
    X = np.array([[0.0, 5.0, 1.0], [2.0, 5.0, 3.0], [1.0, 5.0, 2.0]])
    mm = MinMax.fit(X)
    Z = mm.transform(X)
    np.testing.assert_array_equal(Z[:, 0], [-1.0, 1.0, 0.0])
    np.testing.assert_array_equal(Z[:, 1], [0.0, 0.0, 0.0])  # constant column carries nothing
    np.testing.assert_array_equal(mm.transform(np.array([[4.0, 6.0, 0.0]])), [[3.0, 0.0, -2.0]])
    with pytest.raises(InputError, match="3 feature columns"):
        mm.transform(np.zeros((2, 2)))


def test_minmax_clip_limits_to_the_training_range_and_outside_marks_what_it_changed():
    mm = MinMax.fit(np.array([[0.0, 1.0], [1.0, 3.0]]))
    X = np.array([[2.0, 2.0], [-1.0, 0.0], [0.5, 5.0]])
    np.testing.assert_array_equal(mm.transform(X), [[3.0, 0.0], [-3.0, -2.0], [0.0, 3.0]])  # extrapolates
    np.testing.assert_array_equal(mm.transform(X, clip=True), [[1.0, 0.0], [-1.0, -1.0], [0.0, 1.0]])
    np.testing.assert_array_equal(mm.outside(X), [[True, False], [True, True], [False, True]])
    assert not mm.outside(np.array([[0.0, 1.0], [1.0, 3.0]])).any()  # the bounds themselves are inside
