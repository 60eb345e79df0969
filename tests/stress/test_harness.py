"""The harness: known invariances of metrics under perturbations, control scores equal to
capeval.score, skipped items kept, scores files and callables, outputs."""
from __future__ import annotations

import json

import numpy as np
import pytest

import capeval
from capeval.errors import InputError
from capeval.stress import SOURCES, StressItem
from capeval.stress.scoring import CONTROL
from tests._needs import SPICE_PY, requires

ROWS = [
    {"id": "r1", "candidate": "A man riding a horse on a beach .", "references": ["a person rides a horse by the sea",
                                                                                   "a man on a horse at the beach"],
     "image": "a.jpg"},
    {"id": "r2", "candidate": "Two dogs are playing in the green grass .", "references": ["two dogs play on a lawn",
                                                                                          "dogs running in grass"],
     "image": "b.jpg"},
    {"id": "r3", "candidate": "A <b>red</b> bus | parked next to a building .",
     "references": ["a red bus near a building", "a bus parked on the street"], "image": "c.jpg"},
]


@pytest.fixture(scope="module")
@requires(*SPICE_PY)
def spacy_parser():
    from capeval.data.distractors import SpacyParser

    parser = SpacyParser()
    assert parser.nlp is not None
    return parser


@pytest.fixture(scope="module")
def coco(data_dir, spacy_parser):
    return capeval.stress("coco", ["bleu1", "wembsim", "cider_d"], root=data_dir, n=150,
                          perturbations=["shuffle", "random_caption", "count_swap"], n_resamples=200,
                          parser=spacy_parser)


def test_bleu1_ignores_word_order(coco):
    c = coco.results["bleu1"]["shuffle"]
    assert c.n == 150 and c.tie_rate == 1.0 and c.mean_delta == 0.0 and c.accuracy == 0.0


def test_wembsim_ignores_word_order(coco):
    delta = coco.scores["wembsim"]["shuffle"] - coco.scores["wembsim"][CONTROL]
    assert np.nanmax(np.abs(delta)) < 1e-6


def test_cider_d_lowers_random_captions(coco):
    assert coco.results["cider_d"]["random_caption"].accuracy >= 0.95


def test_control_equals_capeval_score(coco):
    items = coco.items
    res = capeval.score([it.candidate for it in items], [list(it.references) for it in items],
                        ["bleu1", "wembsim", "cider_d"])
    for m in ("bleu1", "wembsim", "cider_d"):
        assert np.array_equal(coco.scores[m][CONTROL], res.per_caption[m])
        assert coco.metric_signatures[m] == res.signatures[m]


def test_skipped_items_are_counted_not_dropped(coco):
    for m, by in coco.results.items():
        for p, c in by.items():
            assert c.n + c.skipped + c.undefined == 150, (m, p)
            assert c.skipped == sum(coco.skip_reasons[p].values())
    assert coco.results["bleu1"]["count_swap"].skipped > 0  # most captions hold no number


def test_benchmark_items_are_images_with_their_other_captions(data_dir):
    from capeval.stress.items import benchmark_items

    items = benchmark_items("coco", root=data_dir, n=5, seed=1)
    assert len(items) == 5 and "coco" in SOURCES
    for it in items:
        assert len(it.references) == 4 and it.candidate not in it.references and it.image.startswith("COCO_val2014_")
    assert benchmark_items("coco", root=data_dir, n=5, seed=1) == items


def _rows_file(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


def n_words(candidates, references, images):
    return [float(len(c.split())) for c in candidates]


def test_scores_file_round_trip_equals_the_callable(tmp_path, spacy_parser):
    rows = _rows_file(tmp_path)
    units = tmp_path / "units.jsonl"
    capeval.stress(input=rows, export=units, parser=spacy_parser, n_resamples=50)
    recs = [json.loads(line) for line in units.read_text(encoding="utf-8").splitlines()]
    assert {k["perturbation"] for r in recs for k in r["keys"]} >= {"control", "shuffle", "drop_half"}
    scored = tmp_path / "scored.jsonl"
    scored.write_text("".join(json.dumps({"id": r["id"], "score": len(r["candidate"].split())}) + "\n" for r in recs))
    via_file = capeval.stress(input=rows, scores={"mine": scored}, parser=spacy_parser, n_resamples=50)
    via_callable = capeval.stress(input=rows, metrics=[n_words], parser=spacy_parser, n_resamples=50)
    for p in via_file.perturbations:
        assert via_file.results["mine"][p] == via_callable.results["n_words"][p], p
    # repeat lengthens the caption, so a length metric always moves up: never right
    assert via_callable.results["n_words"]["repeat"].accuracy == 0.0
    assert via_callable.results["n_words"]["drop_half"].accuracy == 1.0


def test_a_scores_file_missing_a_unit_is_an_error(tmp_path, spacy_parser):
    rows = _rows_file(tmp_path)
    scored = tmp_path / "scored.jsonl"
    scored.write_text(json.dumps({"id": "u0", "score": 1.0}) + "\n")
    with pytest.raises(InputError):
        capeval.stress(input=rows, scores={"mine": scored}, parser=spacy_parser)


def test_user_metric_class(spacy_parser):
    class Length(capeval.UserMetric):
        name = "length_metric"
        version = "1"

        def score(self, candidates, references, images):
            return [float(len(c)) for c in candidates]

    res = capeval.stress(items=[StressItem(r["id"], r["candidate"], tuple(r["references"])) for r in ROWS],
                         metrics=[Length], parser=spacy_parser, n_resamples=20, perturbations="repeat,case_punct")
    assert res.results["length_metric"]["repeat"].accuracy == 0.0


def test_bad_arguments_are_errors(tmp_path, spacy_parser):
    with pytest.raises(InputError, match="unknown stress source"):
        capeval.stress("nosuch", ["bleu1"])
    with pytest.raises(InputError, match="unknown perturbation"):
        capeval.stress(items=ROWS, metrics=["bleu1"], perturbations=["flip"])
    with pytest.raises(InputError, match="exactly one"):
        capeval.stress(metrics=["bleu1"])
    with pytest.raises(InputError, match="share the id"):
        capeval.stress(items=[ROWS[0], ROWS[0]], metrics=["bleu1"], parser=spacy_parser)


def test_cli_outputs_and_overwrite(tmp_path, spacy_parser):
    from typer.testing import CliRunner

    from capeval.cli.main import app

    rows = _rows_file(tmp_path)
    out_json, out_md, out_html = tmp_path / "s.json", tmp_path / "s.md", tmp_path / "s.html"
    args = ["stress", "--input", str(rows), "-m", "bleu1,rouge_l", "--bootstrap", "50", "--json", str(out_json),
            "--markdown", str(out_md), "--report", str(out_html)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    doc = json.loads(out_json.read_text())
    assert doc["signature"].startswith("stress|suite:")
    cell = doc["results"]["bleu1"]["shuffle"]
    assert set(cell) >= {"expected", "n", "skipped", "accuracy", "tie_rate", "mean_delta", "ci"}
    html = out_html.read_text()
    assert "<b>red</b>" not in html and "&lt;b&gt;red&lt;/b&gt;" in html and "<script" not in html
    assert html.count("<td style='background:") == 2 * 14  # the heatmap: one cell per metric and perturbation
    assert "| bleu1 |" in out_md.read_text() or "bleu1 |" in out_md.read_text()
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 2 and "--overwrite" in again.output
    assert CliRunner().invoke(app, [*args, "--overwrite"]).exit_code == 0
    bad = CliRunner().invoke(app, ["stress", "nosuch", "-m", "bleu1"])
    assert bad.exit_code == 2 and "unknown stress source" in bad.output and "Traceback" not in bad.output


def test_image_metric_gets_each_items_image(tmp_path, spacy_parser):
    import os

    folder = tmp_path / "imgs"
    (folder / "sub").mkdir(parents=True)
    for r in ROWS:
        (folder / "sub" / r["image"]).write_bytes(b"not really a jpeg")
    seen = []

    class ImageName(capeval.UserMetric):
        name = "image_name_metric"
        version = "1"
        needs_images = True

        def score(self, candidates, references, images):
            seen.extend(os.path.basename(p) for p in images)
            return [float(ord(os.path.basename(p)[0])) for p in images]

    items = [StressItem(r["id"], r["candidate"], tuple(r["references"]), r["image"]) for r in ROWS]
    res = capeval.stress(items=items, metrics=[ImageName], images_dir=folder, parser=spacy_parser, n_resamples=20,
                         perturbations="shuffle")
    assert list(res.scores["image_name_metric"][CONTROL]) == [float(ord(c)) for c in "abc"]
    assert set(seen) == {"a.jpg", "b.jpg", "c.jpg"}
    assert res.results["image_name_metric"]["shuffle"].tie_rate == 1.0
    with pytest.raises(InputError, match="images"):
        capeval.stress(items=[{"candidate": "a dog", "references": ["a cat"]}], metrics=[ImageName],
                       parser=spacy_parser)


def test_cli_export_then_scores(tmp_path, spacy_parser):
    from typer.testing import CliRunner

    from capeval.cli.main import app

    rows = _rows_file(tmp_path)
    units = tmp_path / "units.jsonl"
    r = CliRunner().invoke(app, ["stress", "--input", str(rows), "--export", str(units), "-p", "shuffle,drop_half"])
    assert r.exit_code == 0, r.output
    recs = [json.loads(line) for line in units.read_text(encoding="utf-8").splitlines()]
    assert len(recs) == 3 * 3  # control, shuffle and drop_half of 3 rows, all distinct
    scored = tmp_path / "scored.jsonl"
    scored.write_text("".join(json.dumps({"id": x["id"], "score": -len(x["candidate"])}) + "\n" for x in recs))
    out = tmp_path / "out.json"
    r = CliRunner().invoke(app, ["stress", "--input", str(rows), "--scores", f"mine={scored}", "-p", "shuffle,drop_half",
                                 "--json", str(out), "-q"])
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text())["results"]["mine"]
    assert res["shuffle"]["tie_rate"] == 1.0 and res["drop_half"]["accuracy"] == 0.0  # shorter scores higher here


def test_row_dependent_families_score_every_item():
    from capeval.stress.scoring import full_row_metrics

    assert full_row_metrics(["bleu1", "meteor", "cider_d", "bertscore_f"], None) == {"cider_d", "bertscore_f"}
    assert "bertscore_f" not in full_row_metrics(["bertscore_f"], {"bertscore": {"padding_floor": False}})
    # idf weighs by the references of the whole call: its pre-pass (BERTScore streams it)
    assert "bertscore_f" in full_row_metrics(["bertscore_f"], {"bertscore": {"padding_floor": False, "idf": True}})
    assert full_row_metrics(["bleu1", "learned"], None) == {"bleu1", "learned"}  # learned reads bleu1


def test_a_million_character_candidate_is_refused_by_name_before_parsing():
    """Issue 41, item 8: spaCy parsed a 1,000,000-character caption uncapped (55 s, 3.47 GB,
    then a MemoryError); the stress rules now cap candidates as SPICE-py does."""
    calls = []

    def parser(texts):
        calls.append(len(texts))
        return [() for _ in texts]

    rows = [dict(ROWS[0]), {**ROWS[1], "id": "huge", "candidate": "a" * 1_000_000}]
    with pytest.raises(InputError, match="item 'huge': the candidate has 1,000,000 characters"):
        capeval.stress(items=rows, metrics=["bleu1"], parser=parser, n_resamples=10)
    assert calls == []
