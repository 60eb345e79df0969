"""Polaris loader on fixture files: the Hugging Face CSV layout (Polos's columns) and EXPERT's
exp-val JSON, which has no references (tests/data/fixtures/polaris)."""
from __future__ import annotations

import ast
import csv
import json

import pytest

from capeval import data
from capeval.data.checksums import packaged_manifest
from capeval.digests import sha256_file
from capeval.errors import InputError
from capeval.metrics.user import UserMetric

from .modern_fixtures import FIXTURES, pinned_root

CSV = "polaris/polaris_test.csv"
EXP = "polaris/polaris_exp_val.json"


@pytest.fixture
def root(tmp_path, monkeypatch):
    return pinned_root(tmp_path, monkeypatch, "polaris")


class WordCount(UserMetric):
    """A reference-free stand-in (CLIP-S and PAC-S are reference-free the same way)."""

    name, version = "test_polaris_words", "1"
    needs_references = False

    def score(self, candidates, references, images):
        assert all(r == [] for r in references)
        return [float(len(c.split())) for c in candidates]


def test_pinned_checksum_stays_packaged():
    assert packaged_manifest()["polaris"] == {
        "polaris_exp_val.json": "fef800bd40634682963fd8ef339e5f4197ea1ea43ef9e29f79f07d97e9a63983"}


def test_csv_split_reads_polos_columns(root):
    with open(FIXTURES / CSV, newline="") as fh:
        rows = list(csv.DictReader(fh))
    t = data.load("polaris", root)
    assert t.statistic == "kendall_tau_c" and len(t) == len(rows) == 4
    assert t.candidates == [r["mt"] for r in rows] and 'a man "surfing" on a wave' in t.candidates
    assert t.references == [ast.literal_eval(r["refs"]) for r in rows]
    assert t.human.tolist() == [float(r["score"]) for r in rows]
    assert t.images == [r["imgid"] for r in rows]  # the CSV gives file names already
    # no packaged checksum for the CSVs: the file's own digest is in the signature
    assert t.protocol["files"] == f"polaris_test.csv=unpinned-{sha256_file(root / CSV)[:12]}"
    assert t.protocol["split"] == "test" and t.protocol["source"] == "hf-csv"


@pytest.mark.parametrize("edit, message", [
    (lambda text: text.replace(",mt,", ",cand,", 1), "no column 'mt'"),
    (lambda text: text.replace("\"['A surfer", "\"[A surfer", 1), "line 3: refs .* is not a list literal"),
    (lambda text: text.replace("['A red double-decker bus on a street.', 'A bus driving down the road.']", "[]", 1),
     "line 4: references must be a non-empty list"),
    (lambda text: text.replace("0.25,", "nan,", 1), "score is 'nan'; scores must be finite"),
    # The numbers door: only plain decimals, as JSON writes them (not Python's 1_000).
    (lambda text: text.replace("0.25,", "1_000,", 1), "score '1_000' is not a number"),
])
def test_bad_csv_rows_are_named(root, edit, message):
    (root / CSV).write_text(edit((root / CSV).read_text()))
    with pytest.raises(InputError, match=message):
        data.load("polaris", root)


def test_other_csv_splits_are_files_of_their_own(root):
    from capeval.errors import ResourceNotFound

    with pytest.raises(ResourceNotFound, match="polaris/polaris_val.csv"):
        data.load("polaris", root, split="val")
    with pytest.raises(InputError, match="split"):
        data.load("polaris", root, split="dev")


def test_exp_val_has_no_references(root):
    items = json.loads((FIXTURES / EXP).read_text())
    t = data.load("polaris", root, split="exp-val")
    assert t.references is None and t.protocol["refs"] == "none" and "files" not in t.protocol
    assert t.candidates == [it["mt"] for it in items] and t.human.tolist() == [it["score"] for it in items]
    assert t.images == [f"{it['imgid']}.jpg" for it in items]


def test_table_without_references_must_say_so():
    with pytest.raises(InputError, match="refs=none"):
        data.CorrelationTable("x", ["a dog"], None, [1.0], ["g"], "kendall_tau_c", {"refs": "all"})


def test_reference_based_metric_refused_before_scoring(root):
    from capeval.metaeval.runner import run_benchmark

    with pytest.raises(InputError, match=r"bleu4, cider_d compare\(s\) captions with references, and polaris "
                                         r"split exp-val ships none"):
        run_benchmark("polaris", ["bleu4", "cider_d", WordCount], root=root, load_options={"split": "exp-val"})
    with pytest.raises(InputError, match="ref_mode=each-mean scores each reference separately"):
        run_benchmark("polaris", [WordCount], root=root, load_options={"split": "exp-val", "ref_mode": "each-mean"})


def test_reference_free_metric_runs_on_exp_val(root):
    from scipy import stats

    from capeval.metaeval.runner import run_benchmark

    r = run_benchmark("polaris", [WordCount], root=root, load_options={"split": "exp-val"})
    t = data.load("polaris", root, split="exp-val")
    words = [len(c.split()) for c in t.candidates]
    assert r.experiment.results["test_polaris_words"]["kendall_tau_c"].value == pytest.approx(
        stats.kendalltau(words, t.human, variant="c")[0], abs=1e-12)
    assert "refs:none" in str(r.signature()) and "nrefs:0" in r.metric_signatures["test_polaris_words"]


def test_score_refuses_empty_references_for_reference_metrics():
    from capeval import score

    with pytest.raises(InputError, match="item 0 has no references"):
        score(["a dog"], [[]], ["bleu4"])
    assert score(["a dog runs"], [[]], [WordCount]).per_caption["test_polaris_words"].tolist() == [3.0]


def test_bench_modern_runs_the_three_sets(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from capeval.cli.main import app
    from capeval.metaeval.runner import CORE_BENCHMARKS, resolve_names

    assert resolve_names("all") == list(CORE_BENCHMARKS) and len(CORE_BENCHMARKS) == 5
    assert resolve_names("modern") == ["thumb", "nebula", "polaris"]
    root = pinned_root(tmp_path, monkeypatch, "thumb", "nebula", "polaris")
    res = CliRunner().invoke(app, ["bench", "modern", "-m", "bleu4,cider_d", "--root", str(root), "--no-cache",
                                   "--json", str(tmp_path / "out.json")])
    assert res.exit_code == 0, res.output
    out = json.loads((tmp_path / "out.json").read_text())
    found = {v["_meta"]["benchmark"]: v["_meta"]["statistic"] for v in out.values()
             if isinstance(v, dict) and "_meta" in v}
    assert found == {"thumb": "pearson", "nebula": "kendall_tau_c", "polaris": "kendall_tau_c"}
