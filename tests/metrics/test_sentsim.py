"""``sentsim_*``: mean-pooled MiniLM sentence embeddings, compared with sentence-transformers."""
import numpy as np
import pytest

import capeval
from capeval.errors import InputError

st = pytest.importorskip("sentence_transformers", reason="sentence-transformers (the reference encoder) not installed")

CANDS = ["a dog runs on the grass", "a plate of food on a table", "two people ride bikes down a street"]
REFS = [["a brown dog is running in a field", "a dog plays outside"],
        ["a dog runs", "a cat sleeps on a sofa", "food on a plate"],
        ["cyclists on a city road"]]


@pytest.fixture(scope="module")
def reference_vectors():
    from capeval.resources.encoders import resolve_encoder

    model = st.SentenceTransformer(str(resolve_encoder(None).location), device="cpu")
    sents = list(dict.fromkeys([*CANDS, *(r for rs in REFS for r in rs)]))
    vecs = model.encode(sents, normalize_embeddings=True, convert_to_numpy=True).astype(np.float64)
    return dict(zip(sents, vecs))


def test_equals_sentence_transformers_cosines(reference_vectors):
    res = capeval.score(CANDS, REFS, ["sentsim_max", "sentsim_mean", "sentsim_centroid"])
    v = reference_vectors
    for i, (c, rs) in enumerate(zip(CANDS, REFS)):
        cos = np.array([v[c] @ v[r] for r in rs])
        centroid = np.mean([v[r] for r in rs], axis=0)
        # float32 encoders, different batching: agreement to 1e-5
        assert res.per_caption["sentsim_max"][i] == pytest.approx(cos.max(), abs=1e-5)
        assert res.per_caption["sentsim_mean"][i] == pytest.approx(cos.mean(), abs=1e-5)
        assert res.per_caption["sentsim_centroid"][i] == pytest.approx(
            centroid @ v[c] / np.linalg.norm(centroid), abs=1e-5)
    assert res.corpus["sentsim_mean"] == pytest.approx(float(np.mean(res.per_caption["sentsim_mean"])))


def test_one_reference_makes_the_three_outputs_equal():
    res = capeval.score(CANDS[2:], REFS[2:], ["sentsim_max", "sentsim_mean", "sentsim_centroid"])
    a, b, c = (res.per_caption[k][0] for k in ("sentsim_max", "sentsim_mean", "sentsim_centroid"))
    assert a == pytest.approx(b, abs=1e-12) and a == pytest.approx(c, abs=1e-9)


def test_batch_size_changes_nothing():
    """batch_size only schedules work: every forward pass has the torch runner's fixed shape."""
    a = capeval.score(CANDS, REFS, ["sentsim_max"], options={"sentsim": {"batch_size": 1}})
    b = capeval.score(CANDS, REFS, ["sentsim_max"], options={"sentsim": {"batch_size": 128}})
    assert np.array_equal(a.per_caption["sentsim_max"], b.per_caption["sentsim_max"])


def test_related_caption_scores_higher_and_signature_names_the_model():
    res = capeval.score(["a dog runs on the grass", "a plate of food on a table"], [REFS[0], REFS[0]],
                        ["sentsim_centroid"])
    s = res.per_caption["sentsim_centroid"]
    assert s[0] > s[1]
    sig = str(res.signatures["sentsim_centroid"])
    assert "model:sentence-transformers/all-MiniLM-L6-v2" in sig and "pool:mean-last" in sig


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "8"])
def test_bad_batch_size_is_named(bad):
    with pytest.raises(InputError, match="batch_size"):
        capeval.score(CANDS, REFS, ["sentsim_max"], options={"sentsim": {"batch_size": bad}})
