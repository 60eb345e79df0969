import warnings

import numpy as np
import pytest

from tests._needs import SPICE_PY

import capeval
from capeval.learn.builder import TrainingSet
from capeval.learn.features import NNEVAL_FEATURES, extract, label
from capeval.learn.model import LearnedModel
from capeval.learn.configs import default_model_path
from capeval.learn.train import make_recipe, train_recipe
from capeval.learn.nneval_metric import NNEval

CANDS = ["a dog runs on the grass", "a man rides a red bike", "two cats sleep on a sofa", "a cat"]
REFS = [["a dog is running on grass", "the dog runs in a field"],
        ["a man riding a bike", "a person on a red bicycle"],
        ["two cats sleeping on a couch", "cats lying on a sofa"],
        ["a brown dog running", "a dog runs fast"]]


def _toy_training():
    rng = np.random.default_rng(0)
    words = "a the dog cat man woman red blue runs sits on in grass street ball bike park".split()
    cands, refs, labels = [], [], []
    for i in range(40):
        r = [" ".join(rng.choice(words, 7)) for _ in range(4)]
        good = r[0].split()[:5] + ["today"]
        cands += [" ".join(good), " ".join(rng.choice(words, 6))]
        refs += [r[1:], r[1:]]
        labels += [1, 0]
    return TrainingSet(cands, refs, np.array(labels), [f"coco:{i // 2}" for i in range(80)],
                       ["human:0", "sys"] * 40, {"rows": 80})


@pytest.fixture(scope="module")
def user_model(tmp_path_factory):
    model = train_recipe(make_recipe("nneval", features="bleu1+bleu2+cider_d", max_epochs=5), _toy_training(),
                         validation="none")
    path = tmp_path_factory.mktemp("m") / "user.npz"
    model.save(path)
    return path


def test_user_model_by_path(user_model):
    res = capeval.score(CANDS, REFS, ["nneval", "bleu1"], options={"nneval": {"model": str(user_model)}})
    model = LearnedModel.load(user_model)
    expect = model.predict(extract(CANDS, REFS, model.features).X)
    np.testing.assert_array_equal(res.per_caption["nneval"], expect)
    assert np.all((expect > 0) & (expect < 1))
    sig = res.signatures["nneval"]
    assert sig.startswith("nneval_capeval|out:nneval|") and f"msha:{model.sha256[:12]}" in sig
    assert "|feats:bleu1+bleu2+cider_d|" in sig and "val:none" in sig


def test_missing_model_is_named(tmp_path):
    from capeval.service.scoring import score_units
    from capeval.errors import ResourceNotFound

    missing = str(tmp_path / "gone.npz")
    with pytest.raises(ResourceNotFound, match="gone.npz"):
        capeval.score(CANDS, REFS, ["nneval"], options={"nneval": {"model": missing}})
    with pytest.raises(ResourceNotFound, match="gone.npz"):
        score_units(CANDS, REFS, ["nneval"], options={"nneval": {"model": missing}})


def test_cache_key_follows_the_model_file(user_model, tmp_path):
    from capeval.service.cache import ScoreCache
    from capeval.service.scoring import score_units

    path = tmp_path / "m.npz"
    path.write_bytes(user_model.read_bytes())
    cache = ScoreCache(tmp_path / "cache")
    opts = {"nneval": {"model": str(path)}}
    first = score_units(CANDS, REFS, ["nneval"], options=opts, cache=cache)
    assert score_units(CANDS, REFS, ["nneval"], options=opts, cache=cache).details["cached"]["nneval"]
    retrained = train_recipe(make_recipe("nneval", features="bleu1+bleu2+cider_d", max_epochs=5, seed=9),
                             _toy_training(), validation="none")
    retrained.save(path)  # same path, new weights: the cached scores must not be reused
    again = score_units(CANDS, REFS, ["nneval"], options=opts, cache=cache)
    assert not again.details["cached"]["nneval"]
    assert not np.array_equal(again.per_caption["nneval"], first.per_caption["nneval"])


def test_feature_variant_drift_warns(user_model):
    model = LearnedModel.load(user_model)
    model.meta["feature_signatures"]["bleu1"] = "bleu_other|out:bleu1|version:0"
    with pytest.warns(UserWarning, match="other metric variants: bleu1"):
        NNEval(model=model).compute(CANDS, REFS)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*other metric variants")
        NNEval(model=LearnedModel.load(user_model)).compute(CANDS, REFS)


def test_shipped_model_is_nneval_shaped():
    model = LearnedModel.load(default_model_path())
    assert model.kind == "mlp" and model.features == NNEVAL_FEATURES
    assert [p.shape for p in model.params] == [(8, 72), (72,), (72, 72), (72,), (72, 2), (2,)]
    assert model.meta["validation"]["protocol"] == "expert"
    assert set(model.meta["feature_signatures"]) == {label(f) for f in NNEVAL_FEATURES}
    assert np.all(model.scaler.hi > model.scaler.lo)
    # provenance read by `capeval bench`: fitted on the Tanti COCO pool, early-stopped on Expert
    assert model.meta["trained_on"] == ["tanti-coco"] and model.meta["selected_on"] == ["flickr8k-expert"]
    assert model.refs == "per-ref" and model.clip is True and model.meta["config"]["monotone"] is True


@pytest.mark.slow
@pytest.mark.java
@pytest.mark.needs(*SPICE_PY)  # the shipped model reads SPICE-py features
def test_shipped_model_scores_through_the_api(java):
    res = capeval.score(CANDS, REFS, ["nneval"])
    model = LearnedModel.load(default_model_path())
    # the model's own reference policy (per-ref) and clipping apply
    np.testing.assert_array_equal(res.per_caption["nneval"],
                                  model.predict(extract(CANDS, REFS, model.features, refs=model.refs).X))
    assert not np.array_equal(res.per_caption["nneval"], model.predict(extract(CANDS, REFS, model.features).X))
    assert np.all((res.per_caption["nneval"] >= 0) & (res.per_caption["nneval"] <= 1))
    assert f"msha:{model.sha256[:12]}" in res.signatures["nneval"]


def _narrow(model_path):
    """The user model with training bounds far narrower than the test captions' features."""
    from capeval.learn.features import MinMax

    model = LearnedModel.load(model_path)
    X = extract(CANDS, REFS, model.features).X
    mid = np.median(X, axis=0)
    model.scaler = MinMax(mid - 1e-3, mid + 1e-3)
    return model, X


def test_features_are_clipped_to_the_training_range_and_reported(user_model):
    model, X = _narrow(user_model)
    with pytest.warns(UserWarning, match=r"% of feature values were clipped to model"):
        res = NNEval(model=model).compute(CANDS, REFS)
    lo, hi = model.scaler.lo, model.scaler.hi
    expect = model.predict(np.clip(X, lo, hi), clip=False)  # clipping = scoring the clipped rows
    np.testing.assert_array_equal(res.per_caption["nneval"], expect)
    outside = (X < lo) | (X > hi)
    assert res.details["clipped_fraction"] == pytest.approx(outside.mean()) and outside.mean() > 0.5
    assert res.details["clipped_rows"] == int(outside.any(axis=1).sum())
    assert res.signature_fields["clip"] == "train-range"
    with pytest.warns(UserWarning, match="extrapolated beyond"):
        raw = NNEval(model=model, clip=False).compute(CANDS, REFS)
    np.testing.assert_array_equal(raw.per_caption["nneval"], model.predict(X, clip=False))
    assert raw.signature_fields["clip"] == "off"
    assert not np.array_equal(raw.per_caption["nneval"], res.per_caption["nneval"])


def test_in_range_features_are_not_touched_and_do_not_warn(user_model):
    model = LearnedModel.load(user_model)
    X = extract(CANDS, REFS, model.features).X
    from capeval.learn.features import MinMax

    model.scaler = MinMax(X.min(axis=0) - 0.01, X.max(axis=0) + 0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = NNEval(model=model).compute(CANDS, REFS)
    assert res.details["clipped_fraction"] == 0.0
    np.testing.assert_array_equal(res.per_caption["nneval"], model.predict(X, clip=False))


def test_signature_names_the_reference_policy(user_model):
    refs48 = [[f"{r} number {i}" for i in range(12) for r in refs] for refs in REFS]
    res = capeval.score(CANDS, refs48, ["nneval"], options={"nneval": {"model": str(user_model), "refs": "cap"}})
    assert "|refs:cap4-sha256|" in res.signatures["nneval"] and "|clip:train-range" in res.signatures["nneval"]
    model = LearnedModel.load(user_model)
    from capeval.learn.refsets import unit_refsets

    capped = [unit_refsets(r, "cap", 4)[0] for r in refs48]
    np.testing.assert_array_equal(res.per_caption["nneval"], model.predict(extract(CANDS, capped, model.features).X))
    # the same references in another order give the same capped scores (sha256 choice)
    rev = capeval.score(CANDS, [r[::-1] for r in refs48], ["nneval"],
                        options={"nneval": {"model": str(user_model), "refs": "cap"}})
    np.testing.assert_allclose(rev.per_caption["nneval"], res.per_caption["nneval"], rtol=0, atol=1e-12)
    default = capeval.score(CANDS, REFS, ["nneval"], options={"nneval": {"model": str(user_model)}})
    assert "|refs:all|" in default.signatures["nneval"]  # the policy the model was trained with


def test_per_ref_model_refuses_other_policies(user_model, tmp_path):
    from capeval.errors import InputError

    model = train_recipe(make_recipe("nneval", features="bleu1+bleu2", max_epochs=2, refs="per-ref"),
                         _toy_training(), validation="none")
    assert model.refs == "per-ref"
    with pytest.raises(InputError, match="trained with refs='per-ref'"):
        NNEval(model=model, refs="cap")
    with pytest.raises(InputError, match="trained with refs='all'"):
        NNEval(model=LearnedModel.load(user_model), refs="per-ref")
    with pytest.raises(InputError, match="refs='most'"):
        NNEval(model=model, refs="most")


def test_old_model_files_read_as_all_references_with_clipping(user_model, tmp_path):
    from capeval.learn.model_files import load_npz, save_npz

    arrays, meta = load_npz(user_model)
    for k in ("refs", "max_refs", "clip"):
        meta.pop(k, None)
    save_npz(tmp_path / "old.npz", arrays, meta)
    old = LearnedModel.load(tmp_path / "old.npz")
    assert old.refs == "all" and old.clip is True


def test_signature_names_the_synthetic_negatives(user_model):
    """``neg`` reads none for a model trained without synthetic negatives (its file has no
    ``negatives`` key, like files from before the key existed), else the kinds from the training set."""
    plain = LearnedModel.load(user_model)
    assert "negatives" not in plain.meta and NNEval(model=plain).compute(CANDS, REFS).signature_fields["neg"] == "none"
    training = _toy_training()
    training.info.update(negatives=["object-list", "shuffle"])
    negs = train_recipe(make_recipe("nneval", features="bleu1+bleu2+cider_d", max_epochs=2), training,
                        validation="none")
    assert negs.meta["negatives"] == ["object-list", "shuffle"]
    assert NNEval(model=negs).compute(CANDS, REFS).signature_fields["neg"] == "object-list+shuffle"


def test_cache_key_follows_the_tokens_of_the_feature_families(monkeypatch):
    """NNEval reads METEOR and SPICE: a new METEOR conversion (its cache token) changes the key."""
    from capeval.learn.configs import default_model_path
    from capeval.metrics.registry import get_family

    if not default_model_path().is_file():
        pytest.skip("the packaged NNEval model is not installed")
    nneval, meteor = get_family("nneval"), get_family("meteor")
    monkeypatch.setattr(meteor, "cache_token", classmethod(lambda cls, options: "conversion-a"))
    a = nneval.cache_token({})
    monkeypatch.setattr(meteor, "cache_token", classmethod(lambda cls, options: "conversion-b"))
    b = nneval.cache_token({})
    assert a != b and "meteor=conversion-b" in b
