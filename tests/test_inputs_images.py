"""The ``image`` field of JSONL and CSV inputs, COCO image ids, and ``capeval score --images``."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from capeval.cli.main import app
from capeval.errors import InputError
from capeval.inputs import read_csv, read_input_images, read_jsonl
from capeval.metrics.registry import register_user
from capeval.metrics.user import UserMetric


class ImageBytes(UserMetric):
    """The first byte of each image: tells which file a caption was scored with."""

    name, version = "test_first_byte", "1"
    needs_images = True

    def score(self, candidates, references, images):
        return [float(open(p, "rb").read(1)[0]) for p in images]


register_user(ImageBytes)


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_jsonl_image_field(tmp_path):
    p = _jsonl(tmp_path / "in.jsonl", [{"id": "a", "candidate": "x", "references": ["y"], "image": "1.jpg"},
                                        {"id": "b", "candidate": "x", "references": ["y"]}])
    assert read_input_images(p) == (["a", "b"], ["x", "x"], [["y"], ["y"]], ["1.jpg", None])
    assert read_jsonl(p) == (["a", "b"], ["x", "x"], [["y"], ["y"]])  # unchanged shape
    bad = _jsonl(tmp_path / "bad.jsonl", [{"candidate": "x", "references": ["y"], "image": 5}])
    with pytest.raises(InputError, match=r"bad.jsonl:1: 'image' must be a file name or path, got 5"):
        read_input_images(bad)
    none = _jsonl(tmp_path / "none.jsonl", [{"candidate": "x", "references": ["y"]}])
    assert read_input_images(none)[3] is None


def test_csv_image_column(tmp_path):
    p = tmp_path / "in.csv"
    p.write_text("id,candidate,ref1,image\na,x,y,1.jpg\nb,x,y,\n", encoding="utf-8")
    assert read_input_images(p)[3] == ["1.jpg", None]
    assert read_csv(p) == (["a", "b"], ["x", "x"], [["y"], ["y"]])


def test_coco_results_give_image_ids(tmp_path):
    res = tmp_path / "res.json"
    ann = tmp_path / "ann.json"
    res.write_text(json.dumps([{"image_id": 391895, "caption": "a man on a moped"}]))
    ann.write_text(json.dumps({"annotations": [{"image_id": 391895, "caption": "a man riding a moped"}]}))
    assert read_input_images(res, ann) == ([391895], ["a man on a moped"], [["a man riding a moped"]], [391895])


@pytest.fixture
def image_dir(tmp_path):
    d = tmp_path / "images"
    (d / "val2014").mkdir(parents=True)
    (d / "val2014" / "COCO_val2014_000000391895.jpg").write_bytes(bytes([7]))
    (d / "1007129816.jpg").write_bytes(bytes([9]))
    return d


def test_score_cli_resolves_coco_ids_and_plain_names(tmp_path, image_dir):
    runner = CliRunner()
    res_file, ann = tmp_path / "res.json", tmp_path / "ann.json"
    res_file.write_text(json.dumps([{"image_id": 391895, "caption": "a man on a moped"},
                                    {"image_id": 1007129816, "caption": "a dog"}]))
    ann.write_text(json.dumps({"annotations": [{"image_id": 391895, "caption": "a man riding a moped"},
                                               {"image_id": 1007129816, "caption": "a dog runs"}]}))
    out = tmp_path / "out.json"
    r = runner.invoke(app, ["score", "-i", str(res_file), "-a", str(ann), "-m", "test_first_byte,bleu1",
                            "--images", str(image_dir), "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["per_caption"]["test_first_byte"] == [7.0, 9.0]

    jl = _jsonl(tmp_path / "in.jsonl", [
        {"id": "a", "candidate": "a dog", "references": ["a dog runs"], "image": "1007129816.jpg"},
        {"id": "b", "candidate": "a man", "references": ["a man rides"], "image": "COCO_val2014_000000391895.jpg"}])
    out2 = tmp_path / "out2.json"
    r = runner.invoke(app, ["score", "-i", str(jl), "-m", "test_first_byte", "--images", str(image_dir),
                            "-o", str(out2), "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads(out2.read_text())["per_caption"]["test_first_byte"] == [9.0, 7.0]


def _flat(text: str) -> str:
    return " ".join(text.split())  # Rich wraps long error lines


def test_score_cli_image_errors(tmp_path, image_dir):
    runner = CliRunner()
    jl = _jsonl(tmp_path / "in.jsonl", [{"id": "a", "candidate": "a dog", "references": ["a dog runs"],
                                         "image": "missing.jpg"}])
    r = runner.invoke(app, ["score", "-i", str(jl), "-m", "test_first_byte", "--images", str(image_dir), "-q"])
    assert r.exit_code == 2 and "1 image(s) not found" in _flat(r.output) and "missing.jpg" in r.output
    plain = _jsonl(tmp_path / "plain.jsonl", [{"id": "a", "candidate": "a dog", "references": ["a dog runs"]}])
    r = runner.invoke(app, ["score", "-i", str(plain), "-m", "test_first_byte", "-q"])
    assert r.exit_code == 2 and "no item names an image" in _flat(r.output)
    # Without --images, names are paths relative to the input file.
    (tmp_path / "rel.jpg").write_bytes(bytes([3]))
    rel = _jsonl(tmp_path / "rel.jsonl", [{"id": "a", "candidate": "a dog", "references": ["a dog runs"],
                                           "image": "rel.jpg"}])
    out = tmp_path / "o.json"
    r = runner.invoke(app, ["score", "-i", str(rel), "-m", "test_first_byte", "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["per_caption"]["test_first_byte"] == [3.0]
