"""Benchmarks with images: ``run_benchmark(images_dir=...)``, ``capeval bench --images``,
``capeval data images`` and ``capeval data export``, on the synthetic tables with image names."""
from __future__ import annotations

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from capeval.cli.main import app
from capeval.errors import InputError
from capeval.metaeval.runner import run_benchmark
from capeval.metaeval.tables import to_json_dict
from capeval.metaeval.units import export_records, unit_id
from capeval.metrics.registry import register_user
from capeval.metrics.user import UserMetric
from capeval.service.cache import ScoreCache

NO_CACHE = ScoreCache(enabled=False)


class ImageNumber(UserMetric):
    """1000 × the byte stored in each image file (so a test can tell which image a unit was scored
    with) + the caption's length (so systems differ)."""

    name, version = "test_image_number", "1"
    needs_images = True

    def score(self, candidates, references, images):
        return [1000.0 * open(p, "rb").read(1)[0] + len(c) for c, p in zip(candidates, images)]


register_user(ImageNumber)


@pytest.fixture
def with_images(toy_data, tmp_path):
    """Every toy table names its images; the directory holds them (in a subfolder, as datasets unpack)."""
    d = tmp_path / "imgs" / "sub"
    d.mkdir(parents=True)
    for name, t in list(toy_data.items()):
        n = len(t)
        names = [f"{name}-{i % 7}.jpg" for i in range(n)]
        toy_data[name] = dataclasses.replace(t, images=names)
        for k, img in enumerate(dict.fromkeys(names)):
            (d / img).write_bytes(bytes([k + 1]))
    return toy_data, tmp_path / "imgs"


def test_image_metric_needs_the_directory_before_any_work(with_images):
    with pytest.raises(InputError, match=r"test_image_number read\(s\) the images: pass --images DIR"):
        run_benchmark("toy-corr", ["bleu1", "test_image_number"], cache=NO_CACHE)


def test_units_are_scored_with_their_own_images(with_images):
    tables, d = with_images
    for name in ("toy-corr", "toy-pairs", "toy-sys"):
        res = run_benchmark(name, ["test_image_number"], images_dir=d, cache=NO_CACHE)
        first = {img: k + 1 for k, img in enumerate(dict.fromkeys(tables[name].images))}
        expected = [first[img] for img in tables[name].images]
        t = tables[name]
        if name == "toy-corr":
            assert res.scores["test_image_number"].tolist() == [1000.0 * e + len(c)
                                                               for e, c in zip(expected, t.candidates)]
        elif name == "toy-pairs":  # a then b, both with the pair's image
            assert res.scores["test_image_number"].tolist() == [1000.0 * e + len(c) for e, c in
                                                               zip(expected + expected, t.candidates_a + t.candidates_b)]
        else:
            sys_scores = to_json_dict(res)["test_image_number"]["systems"]
            assert sys_scores == {s: pytest.approx(sum(1000.0 * e + len(c) for e, c in zip(expected, caps)) / len(caps))
                                  for s, caps in t.systems.items()}


def test_missing_images_are_named(with_images):
    tables, d = with_images
    (d / "sub" / "toy-corr-3.jpg").unlink()
    with pytest.raises(InputError, match=r"toy-corr .*1 image\(s\) not found under .*: toy-corr-3.jpg"):
        run_benchmark("toy-corr", ["test_image_number"], images_dir=d, cache=NO_CACHE)


def test_bench_cli_images(with_images, tmp_path):
    _, d = with_images
    js = tmp_path / "r.json"
    r = CliRunner().invoke(app, ["bench", "toy-corr", "-m", "test_image_number,bleu1", "--images", str(d),
                                 "--no-cache", "-q", "--json", str(js)])
    assert r.exit_code == 0, r.output
    assert set(json.loads(js.read_text())) >= {"test_image_number", "bleu1"}
    r = CliRunner().invoke(app, ["bench", "toy-corr", "-m", "test_image_number", "--no-cache", "-q"])
    assert r.exit_code == 2 and "--images DIR" in r.output


def test_data_images_reports_found_and_missing(with_images, tmp_path):
    _, d = with_images
    (d / "sub" / "toy-pairs-2.jpg").unlink()
    r = CliRunner().invoke(app, ["data", "images", "toy-pairs", "--images", str(d), "--root", str(tmp_path)])
    assert r.exit_code == 1
    assert "toy-pairs: 6 of 7 images found" in r.output and "missing (1):\n  toy-pairs-2.jpg" in r.output
    r = CliRunner().invoke(app, ["data", "images", "toy-corr", "--images", str(d), "--root", str(tmp_path), "--json"])
    assert r.exit_code == 0 and json.loads(r.output) == {"benchmark": "toy-corr", "images": 7, "found": 7,
                                                         "missing": [], "units_without_image": 0}


def test_data_images_counts_units_without_image(toy_data, tmp_path):
    r = CliRunner().invoke(app, ["data", "images", "toy-corr", "--images", str(tmp_path), "--root", str(tmp_path)])
    assert r.exit_code == 1 and "60 units name no image" in r.output


def test_data_export_is_stable_and_complete(with_images, tmp_path):
    tables, _ = with_images
    out = tmp_path / "units.jsonl"
    r = CliRunner().invoke(app, ["data", "export", "toy-pairs", "-o", str(out), "--root", str(tmp_path)])
    assert r.exit_code == 0, r.output
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    t = tables["toy-pairs"]
    # pair 0 is a metric tie (b == a): one unit, two keys
    assert sum(len(x["keys"]) for x in recs) == 2 * len(t) and len(recs) == 2 * len(t) - 1
    assert recs[0]["keys"] == [{"pair": 0, "side": "a", "category": "HC"}, {"pair": 0, "side": "b", "category": "HC"}]
    for rec in recs:
        assert rec["id"] == unit_id(rec["candidate"], rec["references"], rec["image"])
        for key in rec["keys"]:
            i = key["pair"]
            cand = t.candidates_a[i] if key["side"] == "a" else t.candidates_b[i]
            assert (cand, t.references[i], t.images[i]) == (rec["candidate"], rec["references"], rec["image"])
    # Same file again (ids depend on content only), and refused over an existing file without --overwrite.
    r = CliRunner().invoke(app, ["data", "export", "toy-pairs", "-o", str(out), "--root", str(tmp_path)])
    assert r.exit_code == 2
    again = tmp_path / "again.jsonl"
    CliRunner().invoke(app, ["data", "export", "toy-pairs", "-o", str(again), "--root", str(tmp_path)])
    assert again.read_text() == out.read_text()


def test_unit_id_is_pinned():
    # A change here breaks every scores file users keep: the id scheme is a contract.
    assert unit_id("a dog", ["a dog runs"], "1.jpg") == "u" + __import__("hashlib").sha256(
        '["a dog",["a dog runs"],"1.jpg"]'.encode()).hexdigest()[:24]
    assert list(export_records(__import__("capeval.data", fromlist=["x"]).CorrelationTable(
        "t", ["a dog"], [["a dog runs"]], [1.0], ["g"], "kendall_tau_c", {}, images=["1.jpg"])))[0]["id"] == \
        unit_id("a dog", ["a dog runs"], "1.jpg")
