"""Every loader records each unit's image file name, in the dataset's own naming (DATA.md):
Flickr8k ``<photo>_<secret>.jpg``, Flickr30k ``<id>.jpg``, COCO ``COCO_val2014_%012d.jpg``,
PASCAL VOC ``2008_005747.jpg``, ABSTRACT-50S ``Scene<k>_<j>.png``. Checked against the files'
own ids, not against the loaders' output."""
from __future__ import annotations

import json
import re

import pytest

from capeval import data

pytestmark = pytest.mark.data

FLICKR8K = re.compile(r"\d+_[0-9a-f]+\.jpg")
FLICKR30K = re.compile(r"\d+\.jpg")
COCO = re.compile(r"COCO_val2014_\d{12}\.jpg")


def _composite_lines(root):
    path = root / "composite" / "composite_umic_decoded.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_flickr8k_expert_images_are_the_judged_images(data_dir):
    t = data.load("flickr8k-expert", root=data_dir)
    assert len(t.images) == len(t)
    # The row's group is the bare image id of the clipscore json key.
    assert all(img == f"{g}.jpg" for img, g in zip(t.images, t.groups))
    assert all(FLICKR8K.fullmatch(i) for i in t.images)
    test_list = set((data_dir / "flickr8k/Flickr8k_text/Flickr_8k.testImages.txt").read_text().split())
    assert set(t.images) == test_list


@pytest.mark.parametrize("options", [{"protocol": "elliott-keller"}, {"rebuild_from_raw": True}])
def test_flickr8k_expert_other_protocols_record_images(data_dir, options):
    t = data.load("flickr8k-expert", root=data_dir, **options)
    assert all(img == f"{g}.jpg" for img, g in zip(t.images, t.groups))


def test_flickr8k_cf_images_follow_the_annotation_file(data_dir):
    t = data.load("flickr8k-cf", root=data_dir)
    lines = (data_dir / "flickr8k/Flickr8k_text/CrowdFlowerAnnotations.txt").read_text().splitlines()
    assert t.images == [line.split("\t")[0] for line in lines]


def test_composite_images_per_subset(data_dir):
    t = data.load("composite", root=data_dir)
    recs = _composite_lines(data_dir)
    assert t.images == [r["image"] for r in recs]
    pattern = {"flickr8k": FLICKR8K, "flickr30k": FLICKR30K, "coco": COCO}
    counts = {}
    for subset, img in zip(t.extra["subset"], t.images):
        assert pattern[subset].fullmatch(img), (subset, img)
        counts.setdefault(subset, set()).add(img)
    assert {k: len(v) for k, v in counts.items()} == {"flickr8k": 997, "flickr30k": 991, "coco": 2007}


def test_pascal50s_images_both_label_sources(data_dir):
    t = data.load("pascal50s", root=data_dir)
    raw = json.loads((data_dir / "pascal50s/EXPERT_processed/pascal_50s.json").read_text())
    assert t.images == [item["image"].rsplit("/", 1)[-1] for cat in ("HC", "HI", "HM", "MM") for item in raw[cat]]
    assert len(set(t.images)) == 1000 and all(re.fullmatch(r"\d{4}_\d{6}\.jpg", i) for i in t.images)
    alt = data.load("pascal50s", root=data_dir, labels="pair-majority")
    assert len(alt.images) == len(alt) and set(alt.images) == set(t.images)


def test_abstract50s_images_are_scene_files(data_dir):
    t = data.load("abstract50s", root=data_dir)
    assert len(t.images) == len(t)
    assert all(re.fullmatch(r"Scene\d+_\d+\.png", i) for i in t.images)
    # a pair's references are one scene's 48 sentences; its image is that scene's URL's file name
    import numpy as np

    from capeval.data._common import load_mat

    scenes = np.atleast_1d(load_mat(data_dir / "abstract50s/abstract50S.mat")["abs_sent"])
    by_sentences = {tuple(sorted(" ".join(str(x).split()) for x in np.atleast_1d(s.sentences))): str(s.name)
                    for s in scenes}
    for refs, img in zip(t.references, t.images):
        assert by_sentences[tuple(sorted(refs))].endswith("/clipart/" + img)


def test_foil_sample_images_come_from_the_file(data_dir):
    t = data.load("foil-sample", root=data_dir)
    raw = json.loads((data_dir / "foil_sample_only/sample_foil_test2017.json").read_text())
    names = {im["id"]: im["file_name"] for im in raw["images"]}
    assert t.images == [names[i] for i in t.extra["image_id"]]
    assert all(img == f"COCO_val2014_{i:012d}.jpg" for img, i in zip(t.images, t.extra["image_id"]))


@pytest.mark.parametrize("name,pattern", [("tanti-coco", COCO), ("tanti-flickr30k", FLICKR30K),
                                          ("tanti-flickr8k", FLICKR8K)])
def test_tanti_system_tables_images(data_dir, name, pattern):
    t = data.load(name, root=data_dir)
    assert t.images == t.image_ids and all(pattern.fullmatch(i) for i in t.images)


def test_tanti_human200_images(data_dir):
    t = data.load("tanti-human200", root=data_dir)
    assert t.images == t.groups and len(set(t.images)) == 200 and all(COCO.fullmatch(i) for i in t.images)
    s = data.load("tanti-human200", root=data_dir, table="system")
    assert s.images == s.image_ids
