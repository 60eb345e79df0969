"""The ``learned`` metric: contract, features shared with other requested metrics, provenance."""
from __future__ import annotations

import numpy as np
import pytest

from tests._needs import SPICE_PY

import capeval
from capeval.errors import InputError, ResourceNotFound
from capeval.learn import lobo
from capeval.learn import ranker_features as rf
from capeval.learn.ranker_model import RankerModel, default_model_path
from tests.learn.test_ranker import _rating_block

CANDS = ["a dog runs on the grass", "two cats sleep on a sofa", "a man rides a red bike", "a plate of food"]
REFS = [["a dog is running on grass", "the dog runs"], ["two cats are sleeping", "cats on a couch"],
        ["a man riding a bicycle", "a person on a red bike"], ["food on a plate", "a plate with pasta"]]
FEATS = rf.parse("bleu1+rouge_l+cider_d+length")


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    rng = np.random.default_rng(0)
    b = _rating_block("synthetic-a")
    X = np.column_stack([b.X[:, 0], b.X[:, 1], np.abs(rng.normal(size=len(b.X))), 5 + b.X[:, 2]])
    m = lobo.train("linear", [lobo.Block(b.judgments, X)], FEATS, meta={"name": "tiny"})
    path = tmp_path_factory.mktemp("learned") / "tiny.npz"
    m.save(path)
    return path


def test_one_finite_float_per_candidate_equal_to_the_model_on_its_features(model_path):
    res = capeval.score(CANDS, REFS, ["learned"], options={"learned": {"model": str(model_path)}})
    s = res.per_caption["learned"]
    assert s.shape == (4,) and np.isfinite(s).all()
    m = RankerModel.load(model_path)
    expect = m.predict(rf.compute(CANDS, REFS, m.features).X)
    np.testing.assert_array_equal(s, expect)
    sig = res.signatures["learned"]
    assert "model:tiny" in sig and f"msha:{m.sha256[:12]}" in sig and "trained:synthetic-a" in sig
    assert "clip:train-range" in sig and "refs:groups-of-5-mean" in sig


def test_features_are_shared_with_other_requested_metrics(model_path, monkeypatch):
    from capeval.metrics import bleu

    calls = []
    real = bleu.BleuCoco.statistics  # what capeval.score asks of every family
    monkeypatch.setattr(bleu.BleuCoco, "statistics", lambda self, *a, **kw: calls.append(1) or real(self, *a, **kw))
    opts = {"learned": {"model": str(model_path)}}
    together = capeval.score(CANDS, REFS, ["learned", "bleu1", "rouge_l"], options=opts)
    assert len(calls) == 1  # bleu ran once, for both the user and the model
    alone = capeval.score(CANDS, REFS, ["learned"], options=opts)
    np.testing.assert_array_equal(together.per_caption["learned"], alone.per_caption["learned"])
    assert list(together.per_caption) == ["learned", "bleu1", "rouge_l"]  # the user's order


def test_more_references_than_trained_are_scored_in_groups_and_averaged(model_path):
    refs = [r * 6 for r in REFS]  # 12 references each: groups of 4+4+4 under max_refs=5
    fm = rf.compute(CANDS, refs, FEATS, max_refs=5)
    by_group = [rf.compute(CANDS, [r[g.start:g.stop] for r in refs], FEATS, max_refs=None).X
                for g in rf.ref_groups(12, 5)]
    # Per-group scoring of the same (candidate, reference group) units: CIDEr-D's df differs
    # with the corpus, so compare the corpus-independent columns exactly.
    for k in (0, 1, 3):
        np.testing.assert_allclose(fm.X[:, k], np.mean([x[:, k] for x in by_group], axis=0), rtol=0, atol=1e-12)
    res = capeval.score(CANDS, refs, ["learned"], options={"learned": {"model": str(model_path)}})
    assert np.isfinite(res.per_caption["learned"]).all()


def test_missing_model_file_and_bad_options_are_named(tmp_path):
    with pytest.raises(ResourceNotFound, match="nope.npz"):
        capeval.score(CANDS, REFS, ["learned"], options={"learned": {"model": str(tmp_path / "nope.npz")}})
    with pytest.raises(InputError, match="cache"):
        capeval.score(CANDS, REFS, ["learned"], options={"learned": {"model": None, "cache": 3}})


@pytest.mark.skipif(not default_model_path().is_file(), reason="the shipped learned model is not built")
@pytest.mark.needs(*SPICE_PY)  # the shipped model reads SPICE-py features
def test_shipped_model_meets_the_contract():
    res = capeval.score(CANDS, REFS, ["learned"])
    s = res.per_caption["learned"]
    assert s.shape == (4,) and np.isfinite(s).all()
    m = RankerModel.load(default_model_path())
    assert set(m.trained_on) and m.meta.get("seed") is not None
    # better captions of the same image score higher
    good = capeval.score(["a dog runs on the grass", "a plate of food on a table"], REFS[:1] * 2, ["learned"])
    assert good.per_caption["learned"][0] > good.per_caption["learned"][1]


def test_shipped_aliases_name_their_files_and_record_their_recipe():
    from capeval.learn import recipes

    for alias, (fname, family) in recipes.SHIPPED.items():
        path = recipes.shipped_path(alias)
        assert path.name == fname and path.is_file()
        m = RankerModel.load(path)
        chosen = {r.name: r for r in recipes.candidates(family)}[m.meta["recipe"]]
        assert m.features == chosen.features and m.meta["recipe_family"] == family
        assert set(m.meta["selection_mean_delta"]) == set(r.name for r in recipes.candidates(family))
        # it won its own selection (ties broken by list order)
        best = max(m.meta["selection_mean_delta"].values())
        assert m.meta["selection_mean_delta"][m.meta["recipe"]] == best
    assert recipes.shipped_path("default") == default_model_path()
    assert not any("mpnet" in str(f.options) for f in RankerModel.load(default_model_path()).features)
    with pytest.raises(InputError, match="no shipped learned model"):
        recipes.shipped_path("bert")
    with pytest.raises(InputError, match="recipe family"):
        recipes.candidates("large")


@pytest.mark.needs(*SPICE_PY)  # so that the error below can only be the encoder's
def test_the_mpnet_model_scores_with_the_mpnet_encoder_or_names_it_missing():
    from capeval.errors import CapevalError
    from capeval.resources.encoders import MPNET
    from capeval.resources.resolver import resolve

    try:
        resolve(MPNET.name)
    except CapevalError:
        with pytest.raises(ResourceNotFound, match="mpnet"):
            capeval.score(CANDS, REFS, ["learned"], options={"learned": {"model": "mpnet"}})
        return
    res = capeval.score(CANDS, REFS, ["learned"], options={"learned": {"model": "mpnet"}})
    assert np.isfinite(res.per_caption["learned"]).all()
    assert "model:learned-mpnet" in res.signatures["learned"]
    assert "sentsim_centroid(model=mpnet)" in res.signatures["learned"]


def test_cache_key_follows_the_tokens_of_the_feature_families(model_path, monkeypatch):
    """A feature family's cache token (METEOR's conversion, SPICE-py's revision) is part of the
    learned family's: cached learned scores are not served once a feature would change."""
    from capeval.metrics.registry import get_family

    learned = get_family("learned")
    before = learned.cache_token({"model": str(model_path)})
    cider = get_family("cider_d")
    monkeypatch.setattr(cider, "cache_token", classmethod(lambda cls, options: "cider-token-x"))
    after = learned.cache_token({"model": str(model_path)})
    assert before != after and "|features:cider_d" in after and after.endswith("=cider-token-x")
