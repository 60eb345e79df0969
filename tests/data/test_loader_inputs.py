"""Loader error handling on small synthetic files (no team data needed)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from capeval import data
from capeval.errors import InputError, ResourceNotFound

CAPS = {
    "img1.jpg": ["A dog runs .", "A dog is running .", "A brown dog .", "Dog on grass .", "A dog  outside ."],
    "img2.jpg": ["A cat sits .", "A cat .", "A cat is sitting .", "Cat on a mat .", "A cat indoors ."],
}


@pytest.fixture
def root(tmp_path):
    txt = tmp_path / "flickr8k" / "Flickr8k_text"
    txt.mkdir(parents=True)
    lines = [f"{img}#{k}\t{c}" for img, caps in CAPS.items() for k, c in enumerate(caps)]
    (txt / "Flickr8k.token.txt").write_text("\n".join(lines) + "\n")
    return tmp_path


def write_cf(root, rows):
    (root / "flickr8k/Flickr8k_text/CrowdFlowerAnnotations.txt").write_text("\n".join(rows) + "\n")


def test_cf_synthetic_per_image_removal(root):
    write_cf(root, ["img1.jpg\timg1.jpg#1\t1\t3\t0", "img1.jpg\timg2.jpg#0\t0\t0\t3",
                    "img2.jpg\timg1.jpg#0\t0.333333333333333\t1\t2"])
    t = data.load("flickr8k-cf", root=root)
    assert t.references[0] == t.references[1] == ["A dog runs .", "A brown dog .", "Dog on grass .", "A dog outside ."]
    assert len(t.references[2]) == 5
    assert t.human.tolist() == [1.0, 0.0, 0.333333333333333]
    assert data.load("flickr8k-cf", root=root, rating="counts").human[2] == 1 / 3


def test_cf_nan_rating_names_line(root):
    write_cf(root, ["img1.jpg\timg1.jpg#1\t1\t3\t0", "img2.jpg\timg1.jpg#0\tnan\t1\t2"])
    with pytest.raises(InputError, match="CrowdFlowerAnnotations.txt line 2: rating is NaN"):
        data.load("flickr8k-cf", root=root)


def test_cf_unknown_caption_and_bad_counts(root):
    write_cf(root, ["img1.jpg\timg9.jpg#1\t1\t3\t0"])
    with pytest.raises(InputError, match="line 1: img9.jpg#1 not in the token file"):
        data.load("flickr8k-cf", root=root)
    write_cf(root, ["img1.jpg\timg1.jpg#1\t0\t0\t0"])
    with pytest.raises(InputError, match="line 1: no judgements"):
        data.load("flickr8k-cf", root=root)


def test_cf_duplicate_judgement_flagged(root):
    write_cf(root, ["img1.jpg\timg2.jpg#0\t0\t0\t3", "img2.jpg\timg1.jpg#0\t0\t0\t3",
                    "img1.jpg\timg2.jpg#0\t1\t3\t0"])
    with pytest.raises(InputError, match="line 3: duplicate judgement of img2.jpg#0 for img1.jpg .first at line 1"):
        data.load("flickr8k-cf", root=root)


def test_line_break_in_caption_is_a_space_or_refused_in_strict_mode(root):
    tok = root / "flickr8k/Flickr8k_text/Flickr8k.token.txt"
    tok.write_text(tok.read_text().replace("A cat .", "A\u2028cat ."))
    write_cf(root, ["img1.jpg\timg2.jpg#0\t0\t0\t3", "img1.jpg\timg2.jpg#1\t0\t0\t3"])
    t = data.load("flickr8k-cf", root=root)
    assert t.candidates[1] == "A cat ." and t.protocol["breaks"] == "space:1"
    with pytest.raises(InputError, match=r"candidate of row 1 \(group 'img1'\) contains a line break \(LINE SEP"
                                         r".*1 text\(s\) of flickr8k-cf hold one. Strict mode \(--strict-line-breaks"):
        data.load("flickr8k-cf", root=root, line_breaks="refuse")


def test_expert_json_nan_names_image(root):
    d = root / "flickr8k/clipscore_format_EXPERT"
    d.mkdir()
    entry = {"ground_truth": CAPS["img1.jpg"],
             "human_judgement": [{"caption": "A cat .", "rating": 1.0}, {"caption": "A cat .", "rating": float("nan")}]}
    (d / "flickr8k.json").write_text(json.dumps({"img1": entry}))
    with pytest.raises(InputError, match="image img1 judgement 1: rating is missing or NaN"):
        data.load("flickr8k-expert", root=root)


def test_expert_raw_drops_self_captions(root):
    (root / "flickr8k/Flickr8k_text/ExpertAnnotations.txt").write_text(
        "img1.jpg\timg1.jpg#0\t4\t4\t4\nimg1.jpg\timg2.jpg#1\t1\t2\t1\n")
    t = data.load("flickr8k-expert", root=root, rebuild_from_raw=True)
    assert t.candidates == ["A cat ."] * 3 and t.human.tolist() == [1.0, 2.0, 1.0]
    assert t.references[0][4] == "A dog outside ."  # whitespace-normalised
    (root / "flickr8k/Flickr8k_text/ExpertAnnotations.txt").write_text("img1.jpg\timg2.jpg#1\t1\tNaN\t1\n")
    with pytest.raises(InputError, match="line 1: rating is NaN"):
        data.load("flickr8k-expert", root=root, rebuild_from_raw=True)


def test_composite_duplicate_and_nan(tmp_path):
    (tmp_path / "composite").mkdir()
    rec = {"subset": "flickr8k", "image": "a.jpg", "position": 0, "candidate": "a dog .", "score": 5,
           "refs_flickr8k": ["A dog .", "Dog .", "A hound .", "A pup .", "Canine ."]}
    f = tmp_path / "composite/composite_umic_decoded.jsonl"
    f.write_text(json.dumps(rec) + "\n" + json.dumps({**rec, "position": 1, "score": float("nan")}) + "\n")
    with pytest.raises(InputError, match="line 2: score is nan"):
        data.load("composite", root=tmp_path)
    f.write_text(json.dumps(rec) + "\n" + json.dumps({**rec, "candidate": "x"}) + "\n")
    with pytest.raises(InputError, match="duplicate position-0"):
        data.load("composite", root=tmp_path)
    f.write_text(json.dumps(rec) + "\n" + json.dumps({**rec, "position": 1, "candidate": "a cat"}) + "\n")
    t = data.load("composite", root=tmp_path)
    assert t.references[0] == t.references[1] == ["Dog .", "A hound .", "A pup .", "Canine ."]
    assert data.load("composite", root=tmp_path, refs="per-row").references[1] == rec["refs_flickr8k"]


def test_missing_file_and_bad_options(tmp_path):
    with pytest.raises(ResourceNotFound, match="pascal50s: missing pascal50s/EXPERT_processed"):
        data.load("pascal50s", root=tmp_path)
    with pytest.raises(InputError, match="unknown benchmark 'nope'"):
        data.load("nope", root=tmp_path)
    with pytest.raises(InputError, match="option refs='some'"):
        data.load("composite", root=tmp_path, refs="some")
    with pytest.raises(InputError, match="unknown option"):
        data.load("composite", root=tmp_path, colour="red")


def test_majority_labels_ties():
    from capeval.data._common import majority_labels

    labels, tied = majority_labels([3, -1, 0, 0], "keep", 0)
    assert labels.tolist() == [0.0, 1.0, 0.5, 0.5] and tied.tolist() == [2, 3]
    a, _ = majority_labels([0] * 50, "random", 7)
    b, _ = majority_labels([0] * 50, "random", 7)
    assert np.array_equal(a, b) and set(a.tolist()) == {0.0, 1.0}
    d, _ = majority_labels([1, 0], "drop", 0)
    assert d[0] == 0.0 and np.isnan(d[1])
