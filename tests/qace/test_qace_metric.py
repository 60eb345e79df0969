"""qace_ref through capeval.score, the JSON output and `capeval explain`."""
from __future__ import annotations

import json

import numpy as np
import pytest

import capeval
from capeval.errors import InputError
from capeval.metrics.registry import family_for
from tests._needs import QACE_REF, requires

CANDS = ["A black dog is catching a frisbee.", "Two men ride horses on the beach."]
REFS = [["A brown dog catches a ball.", "A dog is catching a red ball in the air."],
        ["Two men are riding horses on a beach.", "Two people riding horses by the ocean."]]
ALL = ["qace_ref", "qace_ref_f1", "qace_ref_bertscore", "qace_ref_answerability"]


@pytest.fixture(scope="module")
@requires(*QACE_REF)
def results():
    return {red: capeval.score(CANDS, REFS, ALL, options={"qace_ref": {"reduction": red}})
            for red in ("mean", "max", "merged")}


def test_registered_outputs():
    assert family_for("qace_ref").family == "qace_ref"
    assert {o.name for o in family_for("qace_ref").outputs} == set(ALL)


def test_scores_are_the_mean_of_the_components(results):
    r = results["mean"]
    for i in range(len(CANDS)):
        exp = r.explanations["qace_ref"][i]
        # per reference: mean of the three components, then mean over references
        per_ref = [np.mean([np.mean([getattr(row, k)[j] for row in exp.rows]) for k in ("f1", "bertscore", "answerability")])
                   for j in range(len(REFS[i]))]
        assert r.per_caption["qace_ref"][i] == pytest.approx(np.mean(per_ref))
        assert r.per_caption["qace_ref_f1"][i] == pytest.approx(np.mean([np.mean(row.f1) for row in exp.rows]))
    assert r.per_caption["qace_ref"][1] > r.per_caption["qace_ref"][0]  # the frisbee is wrong


def test_reductions_are_named_and_ordered(results):
    for red, r in results.items():
        assert f"|red:{red}|" in r.signatures["qace_ref"]
        assert r.signatures["qace_ref"].startswith("qace_ref_parse_scenegraph|")
    assert np.all(results["max"].per_caption["qace_ref"] >= results["mean"].per_caption["qace_ref"] - 1e-12)
    assert len(results["merged"].explanations["qace_ref"][0].contexts) == 1
    assert len(results["mean"].explanations["qace_ref"][0].contexts) == 2


def test_explanations_in_json(results):
    d = results["mean"].to_dict(ids=["a", "b"])
    rows = d["explanations"]["qace_ref"][0]["rows"]
    frisbee = [row for row in rows if row["candidate_answer"] == "frisbee"]
    assert frisbee and frisbee[0]["flagged"] and frisbee[0]["answers"] == ["ball", "red ball"]
    json.dumps(d)


def test_bad_options_are_refused():
    with pytest.raises(InputError, match="reduction"):
        capeval.score(CANDS, REFS, ["qace_ref"], options={"qace_ref": {"reduction": "median"}})
    with pytest.raises(InputError, match="offline backend"):
        capeval.score(CANDS, REFS, ["qace_ref"], options={"qace_ref": {"qg": "parse", "qa": "t5-small"}})


def test_explain_cli(results):
    from typer.testing import CliRunner

    from capeval.cli.main import app

    out = CliRunner().invoke(app, ["explain", "--candidate", CANDS[0], "--references", REFS[0][0],
                                   "--references", REFS[0][1]])
    assert out.exit_code == 0, out.output
    assert "[!!]" in out.output and "frisbee" in out.output and "red:mean" in out.output
    js = CliRunner().invoke(app, ["explain", "-c", CANDS[0], "-r", REFS[0][0], "--json", "-O", "qace_ref.reduction=max"])
    assert js.exit_code == 0, js.output
    payload = json.loads(js.output[js.output.index("{"):])
    assert "red:max" in payload["signature"] and payload["explanation"]["candidate"] == CANDS[0]


def test_score_cli_json_carries_explanations(results, tmp_path):
    from typer.testing import CliRunner

    from capeval.cli.main import app

    inp = tmp_path / "in.jsonl"
    inp.write_text("\n".join(json.dumps({"id": f"x{i}", "candidate": c, "references": r})
                             for i, (c, r) in enumerate(zip(CANDS, REFS))) + "\n")
    out = tmp_path / "out.json"
    res = CliRunner().invoke(app, ["score", "-i", str(inp), "-m", "qace_ref", "-o", str(out), "-q"])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    exps = data["explanations"]["qace_ref"]
    assert [e["candidate"] for e in exps] == CANDS and data["ids"] == ["x0", "x1"]
    assert data["per_caption"]["qace_ref"] == pytest.approx(list(results["mean"].per_caption["qace_ref"]))
