"""Learned families know their range (docs/LEARNED.md, "Long captions"): rows whose captions are
longer than the training texts, or whose features lie outside the training range, are counted
(warning, details, ``ood:N``, in memory and streamed alike); ``long_text=sentences`` scores a
paragraph sentence by sentence against the references' sentences and averages."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import capeval
from capeval.errors import InputError
from capeval.learn import lobo
from capeval.learn import ranker_features as rf
from capeval.learn.metric_support import length_range, out_of_range, sentence_units, split_sentences
from capeval.learn.ranker_model import RankerModel
from tests.learn.test_ranker import _rating_block

FEATS = rf.parse("bleu1+rouge_l+cider_d+length")
RANGE = {"candidates": {"min": 2, "p999": 8}, "references": {"min": 2, "p999": 8}}
CANDS = ["a dog runs on the grass", "two cats sleep on a sofa. a dog runs on the grass. a man rides a bike."]
REFS = [["a dog is running on grass", "the dog runs"], ["two cats are sleeping. a dog on grass.", "cats on a couch"]]


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    rng = np.random.default_rng(0)
    b = _rating_block("synthetic-a")
    X = np.column_stack([b.X[:, 0], b.X[:, 1], np.abs(rng.normal(size=len(b.X))), 5 + b.X[:, 2]])
    m = lobo.train("linear", [lobo.Block(b.judgments, X)], FEATS, meta={"name": "tiny", "length_range": RANGE})
    path = tmp_path_factory.mktemp("learned_long") / "tiny.npz"
    m.save(path)
    return path


def _score(cands, refs, options):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = capeval.score(cands, refs, ["learned"], options={"learned": options})
    return res, [str(w.message) for w in seen if "rows lie outside" in str(w.message)]


def test_the_shipped_models_know_the_lengths_they_were_trained_on():
    from capeval.learn.configs import default_model_path
    from capeval.learn.model import LearnedModel
    from capeval.learn.recipes import shipped_path

    for name in ("default", "mpnet"):
        assert length_range(RankerModel.load(shipped_path(name))) == {"candidates": (1.0, 56.0),
                                                                       "references": (1.0, 30.0)}
    assert length_range(LearnedModel.load(default_model_path())) == {"candidates": (6.0, 24.0),
                                                                     "references": (6.0, 30.0)}


def test_rows_outside_the_length_range_are_counted_warned_and_signed(model_path):
    res, said = _score(CANDS, REFS, {"model": str(model_path)})
    d = res.details["learned"]["out_of_range"]
    assert d["rows"] >= 1 and d["length"] == 1  # the 3-sentence paragraph (and its 2-sentence reference)
    assert len(said) == 1 and f"{d['rows']} of 2 rows" in said[0]
    assert res.signatures["learned"].endswith(f"|ood:{d['rows']}|version:{capeval.__version__}")
    short, said = _score(CANDS[:1] * 2, REFS[:1] * 2, {"model": str(model_path)})
    if short.details["learned"]["out_of_range"]["rows"] == 0:
        assert not said and "ood:" not in short.signatures["learned"]


def test_sentences_mode_is_the_mean_of_the_sentences_scored_together(model_path):
    res, said = _score(CANDS, REFS, {"model": str(model_path), "long_text": "sentences"})
    assert res.details["learned"]["out_of_range"]["length"] == 0
    assert "|long:sentences|" in res.signatures["learned"]
    cands, refs, owner = sentence_units(CANDS, REFS)
    assert owner.tolist() == [0, 1, 1, 1] and refs[1] == ["two cats are sleeping.", "a dog on grass.", "cats on a couch"]
    plain = capeval.score(cands, refs, ["learned"], options={"learned": {"model": str(model_path)}})
    units = plain.per_caption["learned"].tolist()
    # same features (the same units scored together, CIDEr-D's df included), averaged in order
    assert res.per_caption["learned"][0] == units[0]
    assert res.per_caption["learned"][1] == (units[1] + units[2] + units[3]) / 3
    # appending a sentence is read
    more, _ = _score([CANDS[1] + " a plate of food."], [REFS[1]], {"model": str(model_path), "long_text": "sentences"})
    assert more.per_caption["learned"][0] != res.per_caption["learned"][1]


def test_feature_values_beyond_the_range_with_slack():
    lo, hi = np.array([0.0, 0.0]), np.array([1.0, 10.0])
    X = np.array([[0.0, 5.0], [1.005, 5.0], [1.02, 5.0], [0.5, -0.2]])
    length, feats = out_of_range(X, lo, hi, ["a b"] * 4, [["a b"]] * 4, None)
    assert feats.tolist() == [0, 0, 1, 1] and length.tolist() == [0, 0, 0, 0]
    length, _ = out_of_range(X[:2], lo, hi, ["a", "a b c"], [["a b"], ["a b c d e f g h i j"]],
                             {"candidates": (2, 8), "references": (2, 8)})
    assert length.tolist() == [1, 1]  # a 1-word candidate; a 10-word reference
    assert split_sentences("A dog.  Two cats! A man") == ["A dog.", "Two cats!", "A man"]
    assert split_sentences("no end") == ["no end"]


def test_a_streamed_run_counts_the_whole_input(model_path, tmp_path):
    from tests.stream._rows import assert_same_result

    cands = CANDS * 3
    refs = REFS * 3
    opts = {"learned": {"model": str(model_path)}}
    mem = capeval.score(cands, refs, ["learned"], options=opts)
    rows = [{"candidate": c, "references": r} for c, r in zip(cands, refs)]
    got = capeval.score_stream(rows, ["learned"], options=opts, chunk_size=2, run_dir=tmp_path / "run")
    assert_same_result(mem, got, ["learned"])
    assert got.details["learned"]["out_of_range"] == mem.details["learned"]["out_of_range"]
    assert mem.details["learned"]["out_of_range"]["length"] == 3


def test_an_unknown_mode_is_refused(model_path):
    with pytest.raises(InputError, match="long_text must be one of truncate, sentences"):
        capeval.score(CANDS, REFS, ["learned"], options={"learned": {"model": str(model_path), "long_text": "x"}})
