"""THumB 1.0 loader on fixture files in the official format (tests/data/fixtures/thumb)."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from capeval import data
from capeval.cli.main import app
from capeval.data import CorrelationTable, SystemTable
from capeval.data.checksums import packaged_manifest, packaged_sources
from capeval.digests import sha256_file
from capeval.errors import InputError, ResourceDamaged, ResourceNotFound

from .modern_fixtures import FIXTURES, fixture_root, pin_fixtures, pinned_root

SCORES = "thumb/mscoco/mscoco_THumB-1.0.jsonl"
REFS = "thumb/mscoco/mscoco_references.json"


def _rows():
    return [json.loads(line) for line in (FIXTURES / SCORES).read_text().splitlines() if line.strip()]


def _refs():
    out = {}
    for line in (FIXTURES / REFS).read_text().splitlines():
        rec = json.loads(line)
        out[rec["seg_id"]] = rec["refs"]
    return out


@pytest.fixture
def root(tmp_path, monkeypatch):
    return pinned_root(tmp_path, monkeypatch, "thumb")


def test_pinned_checksums_and_origin_stay_packaged():
    files = packaged_manifest()["thumb"]
    assert files["mscoco/mscoco_THumB-1.0.jsonl"] == "463ebf947c793a541922ead33eb10a885e77c19e9c7d27cf89e034bfff643efa"
    assert files["mscoco/mscoco_references.json"] == "897672f1f53ed33a376237c33fabc89ebbd04b40e9ced82691c2e9c9324d8fdf"
    assert all(ref.startswith("jungokasai/THumB@") for ref in packaged_sources()["thumb"].values())


def test_default_is_machine_rows_against_total(root):
    t = data.load("thumb", root)
    machine = [r for r in _rows() if r["SYS"] != "Human"]
    assert isinstance(t, CorrelationTable) and t.statistic == "pearson"
    assert len(t) == len(machine) == 6 and "Human" not in t.extra["system"]
    assert t.candidates == [r["hyp"] for r in machine]  # as released: truecased, untokenised
    assert t.human.tolist() == [r["human_score"] for r in machine]
    assert t.images == [r["image"] for r in machine] and t.images[0].startswith("COCO_val2014_")
    refs = _refs()
    assert t.references == [refs[r["seg_id"]] for r in machine]
    assert {len(r) for r in t.references} == {4}
    assert t.protocol == {"dataset": "thumb", "systems": "machine", "target": "total", "refs": "coco-minus-human",
                          "text": "as-released", "rows": "6"}  # pinned files: no "files" entry


@pytest.mark.parametrize("target", ["P", "R"])
def test_target_and_human_rows(root, target):
    t = data.load("thumb", root, rows="all", target=target)
    assert len(t) == 9 and t.extra["system"].count("Human") == 3
    assert t.human.tolist() == [r[target] for r in _rows()]
    assert t.protocol["target"] == target and t.protocol["systems"] == "all"


def test_system_table_means_per_system(root):
    t = data.load("thumb", root, rows="all", table="system")
    assert isinstance(t, SystemTable) and list(t.systems) == ["Up-Down", "VinVL-base", "Human"]
    rows = _rows()
    for s, caps in t.systems.items():
        mine = [r for r in rows if r["SYS"] == s]
        assert caps == [r["hyp"] for r in mine]
        assert t.human[s] == pytest.approx(np.mean([r["human_score"] for r in mine]), abs=1e-12)
    assert t.image_ids == ["391895", "522418", "184613"] and t.protocol["table"] == "system"
    assert len(data.load("thumb", root, table="system").systems) == 2


def test_missing_references_file_is_named(root):
    (root / REFS).unlink()
    with pytest.raises(ResourceNotFound, match="mscoco_references.json"):
        data.load("thumb", root)


def test_modified_file_is_marked_and_refused_by_bench(root):
    with open(root / SCORES, "a") as fh:
        fh.write("\n")
    t = data.load("thumb", root)
    assert t.protocol["files"] == f"mscoco_THumB-1.0.jsonl=modified-{sha256_file(root / SCORES)[:12]}"
    from capeval.metaeval.runner import run_benchmark

    with pytest.raises(ResourceDamaged, match="mscoco_THumB-1.0.jsonl"):
        run_benchmark("thumb", ["bleu4"], root=root)


@pytest.mark.parametrize("change, message", [
    (lambda rows: rows[0].update(set_id=4), "set_id"),
    (lambda rows: rows.append(dict(rows[0])), "duplicate row for system 'Up-Down'"),
    (lambda rows: rows[1].update(seg_id="999"), "no references"),
    (lambda rows: rows[2].update(human_score=float("nan")), "human_score is nan"),
    (lambda rows: rows[3].pop("hyp"), "no field 'hyp'"),
])
def test_bad_rows_are_named(root, change, message):
    rows = _rows()
    change(rows)
    (root / SCORES).write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=message):
        data.load("thumb", root)


def test_system_table_needs_every_system_on_every_image(root):
    rows = [r for r in _rows() if not (r["SYS"] == "VinVL-base" and r["seg_id"] == "184613")]
    (root / SCORES).write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert len(data.load("thumb", root)) == 5
    with pytest.raises(InputError, match="'VinVL-base' has no caption for seg_id '184613'"):
        data.load("thumb", root, table="system")


def test_options_are_checked(root):
    with pytest.raises(InputError, match="target"):
        data.load("thumb", root, target="Fl")
    with pytest.raises(InputError, match="unknown option"):
        data.load("thumb", root, split="test")


def _benchmark_json(out: dict, name: str) -> dict:
    """The one benchmark entry of a ``capeval bench --json`` file."""
    found = [v for v in (out.values() if "_meta" not in out else [out])
             if isinstance(v, dict) and v.get("_meta", {}).get("benchmark") == name]
    assert len(found) == 1, out.keys()
    return found[0]


def test_bench_thumb_end_to_end(root):
    res = CliRunner().invoke(app, ["bench", "thumb", "-m", "bleu4,cider_d", "--root", str(root), "--no-cache",
                                   "--bootstrap", "50", "--json", str(root / "out.json")])
    assert res.exit_code == 0, res.output
    got = _benchmark_json(json.loads((root / "out.json").read_text()), "thumb")
    assert got["_meta"]["statistic"] == "pearson" and got["_meta"]["n"] == 6
    assert got["_signatures"]["benchmark"].startswith("thumb|systems:machine|target:total|")
    assert "stat:pearson" in got["_signatures"]["benchmark"] and "bs:50" in got["_signatures"]["benchmark"]
    # the headline is scipy's Pearson r (and τc beside it) on capeval.score's per-caption numbers
    from capeval import score

    t = data.load("thumb", root)
    mine = score(t.candidates, t.references, ["bleu4", "cider_d"])
    for m in ("bleu4", "cider_d"):
        assert got[m]["pearson"] == pytest.approx(stats.pearsonr(mine.per_caption[m], t.human)[0], abs=1e-12)
        assert got[m]["kendall_tau_c"] == pytest.approx(
            stats.kendalltau(mine.per_caption[m], t.human, variant="c")[0], abs=1e-12)
        assert got["_meta"]["bootstrap"][m]["low"] <= got["_meta"]["bootstrap"][m]["high"]
    assert "thumb|" in res.output


def test_bench_thumb_system_level(root):
    from capeval.metaeval.runner import run_benchmark

    r = run_benchmark("thumb", ["bleu4"], root=root, load_options={"table": "system", "rows": "all"})
    assert r.kind == "system" and r.experiment.systems == ["Up-Down", "VinVL-base", "Human"]
    corr = r.experiment.vs_human["bleu4"].correlations["pearson"]
    x = [r.experiment.scores["bleu4"][s] for s in r.experiment.systems]
    h = [data.load("thumb", root, table="system", rows="all").human[s] for s in r.experiment.systems]
    assert corr.value == pytest.approx(stats.pearsonr(x, h)[0], abs=1e-12)


def test_learned_training_refuses_evaluation_sets(root):
    from capeval.learn.judgments import load_judgments

    with pytest.raises(InputError, match="thumb is an evaluation set.*--allow-eval-sets"):
        load_judgments("thumb", root)
    j = load_judgments("thumb", root, allow_eval_sets=True)
    assert j.kind == "rating" and len(j) == 6 and set(j.images) == {"coco:391895", "coco:522418", "coco:184613"}
    res = CliRunner().invoke(app, ["train", "learned", "--benchmarks", "thumb", "--out", str(root / "m.npz"),
                                   "--root", str(root)])
    assert res.exit_code == 2 and "--allow-eval-sets" in res.output and not (root / "m.npz").exists()


def test_model_trained_on_an_evaluation_set_is_seen_there(root):
    from capeval.metaeval.seen import seen_reasons

    shutil.copytree(FIXTURES / "nebula", root / "nebula")
    assert seen_reasons("thumb", {"trained_on": ["thumb"]}, root=root) == ["trained=thumb"]
    assert seen_reasons("thumb", {"trained_on": ["nebula"]}, root=root) == []
    assert seen_reasons("nebula", {"trained_on": ["thumb"], "selected_on": ["nebula"]}, root=root) == [
        "selected=nebula"]


@pytest.mark.parametrize("name, folder", [("thumb", "thumb"), ("nebula", "nebula"), ("polaris", "polaris")])
def test_download_from_public_origin_and_mirror(tmp_path, monkeypatch, name, folder):
    """The pinned files come from their GitHub origin (sources.json) or a mirror of the data
    layout, verified against the (fixture) checksums; served here from file:// URLs."""
    from capeval.data import download as dl

    src = fixture_root(tmp_path / "src", folder)
    manifest = pin_fixtures(monkeypatch, src)
    monkeypatch.setattr(dl, "packaged_manifest", lambda: manifest)
    gh = tmp_path / "gh"
    for rel, ref in packaged_sources()[folder].items():
        repo_commit, path = ref.split(":", 1)
        repo, commit = repo_commit.split("@")
        target = gh / repo / commit / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / folder / rel, target)
    monkeypatch.setattr(dl, "GITHUB_RAW", gh.as_uri())
    public = dl.download(name, tmp_path / "public")
    mirror = dl.download(name, tmp_path / "mirror", base_url=(tmp_path / "src" / "data").as_uri())
    for dest, got in ((tmp_path / "public", public), (tmp_path / "mirror", mirror)):
        assert {p.relative_to(dest / folder).as_posix(): sha256_file(p) for p in got} == manifest[folder]
    # a copy that does not match the pinned checksum is not installed
    (gh / next(iter(packaged_sources()[folder].values())).replace("@", "/", 1).replace(":", "/", 1)).write_text("x")
    with pytest.raises(InputError, match="failed verification"):
        dl.download(name, tmp_path / "third")
