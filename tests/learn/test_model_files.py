import zipfile

import numpy as np
import pytest

from capeval.errors import InputError, ResourceNotFound
from capeval.learn.features import Feature, MinMax
from capeval.learn.model import LearnedModel
from capeval.digests import sha256_file
from capeval.learn.model_files import load_npz, save_npz


def _model(kind="mlp"):
    rng = np.random.default_rng(0)
    feats = (Feature("bleu1"), Feature("cider_d", scale=0.1), Feature("wmd", (("norm", True),)))
    scaler = MinMax(np.array([0.0, 0.0, 0.2]), np.array([1.0, 2.0, 0.9]))
    if kind == "mlp":
        params = [rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(4, 2)), rng.normal(size=2)]
    else:
        params = [rng.normal(size=3), np.array(0.5)]
    return LearnedModel(kind, params, scaler, feats, "ptb", {"name": "toy", "validation": {"protocol": "none"}})


def test_same_arrays_give_identical_bytes(tmp_path):
    a = save_npz(tmp_path / "a.npz", {"w": np.arange(6.0).reshape(2, 3)}, {"k": 1})
    b = save_npz(tmp_path / "b.npz", {"w": np.arange(6.0).reshape(2, 3)}, {"k": 1})
    assert a == b == sha256_file(tmp_path / "a.npz")
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    w = np.arange(6.0).reshape(2, 3)
    w[0, 0] = np.nextafter(0.0, 1.0)  # the smallest change to one weight changes the checksum
    assert save_npz(tmp_path / "c.npz", {"w": w}, {"k": 1}) != a


def test_files_are_plain_npz_without_pickles(tmp_path):
    save_npz(tmp_path / "m.npz", {"w": np.ones(3)}, {"name": "x"})
    with np.load(tmp_path / "m.npz", allow_pickle=False) as z:
        assert sorted(z.files) == ["meta_json", "w"]
    with zipfile.ZipFile(tmp_path / "m.npz") as zf:
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in zf.infolist())
    with pytest.raises(InputError, match="dtype object"):
        save_npz(tmp_path / "o.npz", {"w": np.array([{"a": 1}], dtype=object)}, {})


def test_bad_files_are_named(tmp_path):
    with pytest.raises(ResourceNotFound, match="nope.npz"):
        load_npz(tmp_path / "nope.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError, match="junk.npz"):
        load_npz(tmp_path / "junk.npz")
    np.savez(tmp_path / "plain.npz", w=np.ones(2))
    with pytest.raises(InputError, match="not a capeval model"):
        load_npz(tmp_path / "plain.npz")


@pytest.mark.parametrize("kind", ["mlp", "linear"])
def test_model_round_trip(tmp_path, kind):
    m = _model(kind)
    sha = m.save(tmp_path / "m.npz")
    back = LearnedModel.load(tmp_path / "m.npz")
    assert back.sha256 == sha and back.kind == kind and back.features == m.features
    assert all(np.array_equal(p, q) for p, q in zip(back.params, m.params))
    X = np.random.default_rng(1).uniform(0, 1, (7, 3))
    np.testing.assert_array_equal(back.predict(X), m.predict(X))
    assert back.meta["feature_labels"] == ["bleu1", "cider_d/10", "wmd(norm=True)"]


def test_predict_applies_minmax_then_the_network():
    m = _model("linear")
    X = np.array([[0.5, 1.0, 0.55], [1.0, 2.0, 0.9]])
    Z = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    np.testing.assert_allclose(m.predict(X), Z @ m.params[0] + 0.5)


def test_inconsistent_models_are_rejected():
    m = _model()
    with pytest.raises(InputError, match="do not fit"):
        LearnedModel("mlp", m.params[2:], m.scaler, m.features)
    with pytest.raises(InputError, match="unknown model kind"):
        LearnedModel("tree", m.params, m.scaler, m.features)
