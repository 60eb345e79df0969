"""Learned-metric features from images and from a user's scores file (``extract(images=...)``,
``capeval.metrics.user.scores_metric``)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from capeval.errors import InputError
from capeval.learn.features import extract, parse_features
from capeval.metrics.registry import register_user
from capeval.metrics.user import UserMetric, scores_metric
from capeval.scorefile import unit_id

CANDS = ["a dog runs on grass", "two cats sleep", "a man rides a bike"]
REFS = [["a dog is running", "a dog on grass"], ["cats sleeping"], ["a man on a bike", "a cyclist"]]


class ImageByte(UserMetric):
    name, version = "test_feature_image_byte", "1"
    needs_images = True

    def score(self, candidates, references, images):
        return [float(open(p, "rb").read(1)[0]) for p in images]


register_user(ImageByte)


@pytest.fixture
def images(tmp_path):
    paths = []
    for i in range(3):
        p = tmp_path / f"pic{i}.jpg"
        p.write_bytes(bytes([10 + i]))
        paths.append(str(p))
    return paths


def test_image_metric_as_a_feature(images):
    fm = extract(CANDS, REFS, parse_features("test_feature_image_byte+bleu1"), images=images)
    assert fm.X[:, 0].tolist() == [10.0, 11.0, 12.0]
    with pytest.raises(InputError, match=r"test_feature_image_byte read\(s\) the images"):
        extract(CANDS, REFS, parse_features("test_feature_image_byte"))


def test_reference_subsets_keep_each_candidate_image(images):
    fm = extract(CANDS, REFS, parse_features("test_feature_image_byte"), images=images, refs="per-ref")
    assert fm.X[:, 0].tolist() == [10.0, 11.0, 12.0]
    with pytest.raises(InputError, match="2 images for 3 candidates"):
        extract(CANDS, REFS, parse_features("test_feature_image_byte"), images=images[:2])


def _scores_file(tmp_path, names, values):
    path = tmp_path / "scores.jsonl"
    path.write_text("".join(json.dumps({"id": unit_id(c, r, n), "score": v}) + "\n"
                            for c, r, n, v in zip(CANDS, REFS, names, values)), encoding="utf-8")
    return path


def test_a_scores_file_as_a_feature(tmp_path, images):
    path = _scores_file(tmp_path, [f"pic{i}.jpg" for i in range(3)], [0.5, -1.0, 2.25])
    cls = scores_metric("outside", path)
    register_user(cls)
    fm = extract(CANDS, REFS, parse_features("outside+bleu1"), images=images)
    assert fm.X[:, 0].tolist() == [0.5, -1.0, 2.25]
    assert fm.signatures["outside"].startswith("user:outside|out:outside|file:sha256:")
    # Exported units name their image: without images, the ids do not match, and it says so.
    with pytest.raises(InputError, match=r"no score for candidate 0 .* \(no images were given"):
        extract(CANDS, REFS, parse_features("outside"))


def test_scores_metric_without_images_matches_units_without_image(tmp_path):
    path = _scores_file(tmp_path, [None] * 3, [1.0, 2.0, 3.0])
    register_user(scores_metric("outside_plain", path))
    fm = extract(CANDS, REFS, parse_features("outside_plain"))
    assert np.array_equal(fm.X[:, 0], [1.0, 2.0, 3.0])


def test_a_learned_model_with_an_image_feature_scores_with_the_call_images(tmp_path, images):
    """The ``learned`` family passes the call's images to its model's features; a model whose
    features read images needs them (no model with image features is shipped)."""
    import capeval
    from capeval.learn import ranker
    from capeval.learn.ranker_model import RankerModel

    features = parse_features("test_feature_image_byte+bleu1")
    X = extract(CANDS, REFS, features, images=images).X
    w = np.array([1.0, 0.0])  # the image feature alone decides the order
    model = RankerModel("linear", [w], ranker.Scaler.fit(X), features, max_refs=None)
    path = tmp_path / "img-model.npz"
    model.save(path)
    res = capeval.score(CANDS, REFS, ["learned"], options={"learned": {"model": str(path)}}, images=images)
    expected = ranker.Scaler.fit(X).transform(X) @ w
    np.testing.assert_allclose(res.per_caption["learned"], expected, rtol=0, atol=1e-12)
    assert np.argsort(res.per_caption["learned"]).tolist() == [0, 1, 2]
    with pytest.raises(InputError, match=r"test_feature_image_byte read\(s\) the images"):
        capeval.score(CANDS, REFS, ["learned"], options={"learned": {"model": str(path)}})


@pytest.mark.filterwarnings("ignore:learned.*clipped")
def test_train_learned_with_an_image_feature(tmp_path, monkeypatch):
    """load_blocks(images_dir=...) gives the image feature each unit's own image; the trained
    model then scores new captions with their images."""
    import capeval
    import capeval.data
    from capeval.data import CorrelationTable
    from capeval.learn import lobo
    from capeval.learn import ranker_features as rf

    rng = np.random.default_rng(0)
    n = 30
    names = [f"{1000 + i % 10}_deadbeef.jpg" for i in range(n)]  # Flickr8k-style file names
    d = tmp_path / "imgs" / "deep"
    d.mkdir(parents=True)
    for k in range(10):
        (d / f"{1000 + k}_deadbeef.jpg").write_bytes(bytes([k]))
    cands = [f"a dog number {i} runs" for i in range(n)]
    human = [float(i % 10) + rng.normal(0, 0.1) for i in range(n)]  # the image decides the rating
    table = CorrelationTable("composite", cands, [["a dog runs", "a dog"]] * n, human,
                             [f"flickr8k/{x}" for x in names],
                             "kendall_tau_c", {"dataset": "composite"}, images=names)
    monkeypatch.setattr(capeval.data, "load", lambda name, root=None, **kw: table)
    feats = rf.parse("test_feature_image_byte+bleu1")
    blocks = lobo.load_blocks(["composite"], feats, images_dir=tmp_path / "imgs", max_refs=None)
    b = blocks["composite"]
    assert b.judgments.image_files == names
    assert b.X[:, 0].tolist() == [float(i % 10) for i in range(n)]
    keep = np.arange(n) % 2 == 0
    assert b.subset(keep).judgments.image_files == names[::2]
    with pytest.raises(InputError, match=r"1 image\(s\) not found .*1003_deadbeef.jpg"):
        (d / "1003_deadbeef.jpg").unlink()
        lobo.load_blocks(["composite"], feats, images_dir=tmp_path / "imgs", max_refs=None)
    model = lobo.train("linear", list(blocks.values()), feats, max_refs=None, meta={"name": "img"})
    path = tmp_path / "img.npz"
    model.save(path)
    paths = [str(d / f"{1000 + k}_deadbeef.jpg") for k in (9, 1)]
    res = capeval.score(["a dog", "a dog"], [["a dog runs"], ["a dog runs"]], ["learned"],
                        options={"learned": {"model": str(path)}}, images=paths)
    assert res.per_caption["learned"][0] > res.per_caption["learned"][1]
