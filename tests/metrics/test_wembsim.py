"""WEmbSim: cosine of mean word embeddings, LCEval MOWE preprocessing, combine over refs."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import capeval
from capeval.errors import InputError
from capeval.metrics.wembsim import WEmbSim, mowe_tokens
from capeval.resources.vectors import load_vectors
from capeval.text.stopwords import get_stopwords


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    p = tmp_path_factory.mktemp("vec") / "toy.txt"
    rows = {"dog": (1, 0), "cat": (0, 1), "runs": (1, 1), "dogs": (2, 0), "grass": (-1, 0)}
    p.write_text("".join(f"{w} {x} {y}\n" for w, (x, y) in rows.items()), encoding="utf-8")
    return load_vectors(p)


def test_preprocessing_deletes_punctuation_then_filters(toy):
    stop = get_stopwords("nltk-153")
    # "dog 's" -> "dog s": "s" is a stop word; "dog's" -> "dogs"; quotes vanish; case folds.
    assert mowe_tokens('The DOG \'s " runs , on grass .', stop, toy) == ["dog", "runs", "grass"]
    assert mowe_tokens("the dog's zebra", stop, toy) == ["dogs"]  # zebra is OOV: skipped


def test_hand_computed_cosines(toy):
    cands = ["the dog runs ."]
    refs = [["a cat", "dog", "grass"]]
    # mean(dog, runs) = (1, .5): cos with cat = .5/sqrt(1.25); with dog = 1/sqrt(1.25); with grass = -that.
    c_cat, c_dog = 0.5 / math.sqrt(1.25), 1 / math.sqrt(1.25)
    want = {"mean": (c_cat + c_dog - c_dog) / 3, "max": c_dog, "min": -c_dog}
    for combine, value in want.items():
        out = WEmbSim(vectors=toy, combine=combine).compute(cands, refs)
        assert out.per_caption["wembsim"][0] == pytest.approx(value, abs=1e-15)
        assert out.signature_fields["combine"] == combine


def test_empty_side_scores_minus_one_with_warning(toy):
    cands = ["the of a", "dog"]
    refs = [["dog"], ["cat", "zebra ."]]
    with pytest.warns(UserWarning, match="1 candidate.*1 reference"):
        out = WEmbSim(vectors=toy).compute(cands, refs)
    assert out.per_caption["wembsim"][0] == -1.0
    assert out.per_caption["wembsim"][1] == pytest.approx((0.0 + -1.0) / 2, abs=1e-15)
    assert out.details == {"empty_candidates": 1, "empty_reference_pairs": 1}
    assert out.signature_fields["empty"] == -1.0


def test_identical_sentences_score_one_and_stay_in_range(toy):
    out = WEmbSim(vectors=toy, combine="max").compute(["dog runs grass"] * 3, [["grass runs dog"]] * 3)
    assert np.all(out.per_caption["wembsim"] <= 1.0)
    assert out.per_caption["wembsim"] == pytest.approx(1.0, abs=1e-15)


def test_bad_combine(toy):
    with pytest.raises(InputError, match="combine"):
        WEmbSim(vectors=toy, combine="median")


def test_api_signature(toy):
    res = capeval.score(["A dog runs ."], [["A cat ."]], metrics=["wembsim"],
                        options={"wembsim": {"vectors": toy, "combine": "min", "stopwords": "nltk-179"}})
    sig = res.signatures["wembsim"]
    for part in ("wembsim_mowe|", "vec:toy.txt", "dim:2", "combine:min", "stop:nltk-179", "empty:-1.0"):
        assert part in sig


def _loop_reference(cands, refs, wv, stop, combine):
    """One pair at a time, as LCEval's MOWE feature reads: mean vector, 1 - cosine distance."""
    from scipy.spatial.distance import cosine

    def mowe(text):
        toks = mowe_tokens(text, stop, wv)
        return np.mean(wv.vectors(toks).astype(np.float64), axis=0) if toks else None

    agg = {"mean": np.mean, "max": max, "min": min}[combine]
    out = []
    for c, rs in zip(cands, refs):
        vc = mowe(c)
        sims = []
        for r in rs:
            vr = mowe(r)
            sims.append(-1.0 if vc is None or vr is None else 1.0 - cosine(vc, vr))
        out.append(agg(sims))
    return np.array(out)


@pytest.mark.data
@pytest.mark.needs("model:glove-6b-50d")
@pytest.mark.parametrize("combine", ["mean", "max"])
def test_vectorised_equals_pair_loop_on_flickr8k_expert(data_dir, combine):
    from capeval.data import load
    from capeval.text import tokenize_corpus

    table = load("flickr8k-expert", root=data_dir)
    cands, refs = tokenize_corpus(table.candidates[:1500], table.references[:1500], "ptb")
    assert len(cands) == len(refs) == 1500 and cands[0] == cands[0].lower()  # tokenized: lower case
    wv = load_vectors("glove-6b-50d")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = WEmbSim(vectors=wv, combine=combine).compute(cands, refs).per_caption["wembsim"]
    want = _loop_reference(cands, refs, wv, get_stopwords("nltk-153"), combine)
    assert np.max(np.abs(got - want)) <= 1e-12
    assert np.unique(got).size > 100  # real spread, not a constant
