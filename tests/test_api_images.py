"""Images as an input of ``capeval.score`` and of the score cache, with a stand-in image metric
(the size of each image file) so no model is needed."""
from __future__ import annotations

import os

import numpy as np
import pytest

import capeval
from capeval.errors import InputError
from capeval.imagedir import ImageDir, candidate_names
from capeval.metrics.registry import register_user
from capeval.metrics.user import UserMetric
from capeval.service.cache import ScoreCache
from capeval.service.scoring import score_units

CANDS = ["a dog runs", "two cats sleep", "a red bike"]
REFS = [["a dog is running"], ["cats sleeping"], ["a bike that is red"]]
CALLS: list[str] = []


class FileSize(UserMetric):
    """Reads every image: the number is the file's size in bytes."""

    name, version = "test_file_size", "1"
    needs_images = True

    def score(self, candidates, references, images):
        CALLS.append(self.name)
        return [float(os.path.getsize(p)) for p in images]


class SeesImages(UserMetric):
    """Records what it was given; scores 1 where an image came, 0 where none."""

    name, version = "test_sees_images", "1"
    seen: list = []

    def score(self, candidates, references, images):
        CALLS.append(self.name)
        SeesImages.seen.append(images)
        return [0.0 if images is None else 1.0 for _ in candidates]


register_user(FileSize)
register_user(SeesImages)


@pytest.fixture
def pictures(tmp_path):
    paths = []
    for i, size in enumerate((10, 20, 30)):
        p = tmp_path / f"img{i}.jpg"
        p.write_bytes(bytes([i]) * size)
        paths.append(str(p))
    return paths


def test_image_metric_reads_the_images(pictures):
    res = capeval.score(CANDS, REFS, ["test_file_size", "bleu1"], images=pictures)
    assert res.per_caption["test_file_size"].tolist() == [10.0, 20.0, 30.0]
    assert res.signatures["test_file_size"].startswith("user:test_file_size|out:test_file_size|tok:none|")


def test_image_metric_without_images_fails_before_any_scoring():
    CALLS.clear()
    with pytest.raises(InputError, match=r"test_file_size read\(s\) the images: pass images=.*--images DIR"):
        capeval.score(CANDS, REFS, ["test_sees_images", "bleu1", "test_file_size"])
    assert CALLS == []


def test_user_metrics_receive_images_or_none(pictures):
    SeesImages.seen.clear()
    capeval.score(CANDS, REFS, ["test_sees_images"])
    capeval.score(CANDS, REFS, ["test_sees_images"], images=pictures)
    assert SeesImages.seen == [None, pictures]


@pytest.mark.parametrize("bad,pattern", [
    (lambda p: p[:2], r"2 images for 3 candidates"),
    (lambda p: [p[0], p[1], p[1] + ".missing"], r"image of candidate 2 \(id 'c'\): '.*img1.jpg.missing' does not exist"),
    (lambda p: [p[0], os.path.dirname(p[0]), p[2]], r"image of candidate 1 \(id 'b'\): .* is not a file"),
    (lambda p: [p[0], None, p[2]], r"image of candidate 1 \(id 'b'\) is None, not a file path"),
    (lambda p: p[0], r"not a single path"),
])
def test_bad_images_name_the_item(pictures, bad, pattern):
    with pytest.raises(InputError, match=pattern):
        capeval.score(CANDS, REFS, ["bleu1"], ids=["a", "b", "c"], images=bad(pictures))


def test_cache_key_of_an_image_metric_holds_the_image_content(pictures, tmp_path, monkeypatch):
    cache = ScoreCache(tmp_path / "cache")
    first = score_units(CANDS, REFS, ["test_file_size", "bleu1"], cache=cache, images=pictures)
    assert first.details["cached"] == {"test_file_size": False, "bleu1": False}
    again = score_units(CANDS, REFS, ["test_file_size", "bleu1"], cache=cache, images=pictures)
    assert again.details["cached"] == {"test_file_size": True, "bleu1": True}
    # Same paths, new content: the image metric misses and sees the new file; BLEU still hits.
    with open(pictures[1], "wb") as fh:
        fh.write(b"x" * 99)
    changed = score_units(CANDS, REFS, ["test_file_size", "bleu1"], cache=cache, images=pictures)
    assert changed.details["cached"] == {"test_file_size": False, "bleu1": True}
    assert changed.per_caption["test_file_size"].tolist() == [10.0, 99.0, 30.0]


def test_each_image_is_hashed_once_per_run(pictures, tmp_path, monkeypatch):
    import capeval.digests

    reads: list[str] = []
    real = capeval.digests.sha256_file
    monkeypatch.setattr(capeval.digests, "sha256_file", lambda p, *a: reads.append(p) or real(p, *a))
    hashes: dict[str, str] = {}
    images = [pictures[0], pictures[0], pictures[1]]
    for _ in range(2):  # two calls of one run (a benchmark's systems) share the hashes
        score_units(CANDS, REFS, ["test_file_size"], cache=ScoreCache(tmp_path / "c2"), images=images,
                    image_hashes=hashes)
    assert sorted(reads) == sorted(set(images))


def test_callables_are_never_cached(tmp_path):
    calls = []

    def counted(c, r, i):
        calls.append(1)
        return np.ones(len(c))

    cache = ScoreCache(tmp_path / "cache")
    name = capeval.metrics.user.as_metric_name(counted)
    for _ in range(2):
        res = score_units(CANDS, REFS, [name], cache=cache)
        assert res.details["cached"] == {"counted": False}
    assert len(calls) == 2


def test_user_metric_names_may_not_take_a_built_in_name():
    class Bad(UserMetric):
        name, version = "bleu4", "1"

        def score(self, c, r, i):
            return [0.0] * len(c)

    with pytest.raises(InputError, match="built-in name 'bleu4'"):
        capeval.score(CANDS, REFS, [Bad])


def test_redefining_a_user_metric_replaces_it():
    def twice(c, r, i):
        return [2.0] * len(c)

    assert capeval.score(CANDS, REFS, [twice]).per_caption["twice"].tolist() == [2.0] * 3

    def twice(c, r, i):  # noqa: F811 - a notebook cell run again with a fix
        return [3.0] * len(c)

    assert capeval.score(CANDS, REFS, [twice]).per_caption["twice"].tolist() == [3.0] * 3


# ---- image directories ------------------------------------------------------------------

def test_coco_ids_and_plain_names_resolve(tmp_path):
    (tmp_path / "val2014").mkdir()
    coco = tmp_path / "val2014" / "COCO_val2014_000000391895.jpg"
    coco.write_bytes(b"1")
    flickr = tmp_path / "1007129816.jpg"
    flickr.write_bytes(b"2")
    d = ImageDir(tmp_path)
    assert d.find(391895) == coco and d.find("391895") == coco  # image_id, found below the top
    assert d.find(1007129816) == flickr  # no COCO name: <id>.jpg
    assert d.find("COCO_val2014_000000391895.jpg") == coco
    assert d.find("nope.jpg") is None
    assert candidate_names(5)[0] == "COCO_val2014_000000000005.jpg"
    with pytest.raises(InputError, match=r"2 image\(s\) not found under .*: a.jpg, b.jpg"):
        d.resolve(["a.jpg", 391895, "b.jpg", "a.jpg"], "bench")
    with pytest.raises(InputError, match="item 1 has no image name"):
        d.resolve([391895, None], "bench")


def test_ambiguous_file_names_are_refused(tmp_path):
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "x.jpg").write_bytes(b"")
    with pytest.raises(InputError, match="'x.jpg' is ambiguous"):
        ImageDir(tmp_path).find("x.jpg")
    with pytest.raises(InputError, match="not a directory"):
        ImageDir(tmp_path / "a" / "x.jpg")
