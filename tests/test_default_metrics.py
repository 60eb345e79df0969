"""The default metric set adapts to the input: a family that cannot score it (CIDEr-D on a single
caption with df from the scored set) is skipped with the reason and the fix; named metrics are
still all scored or refused."""
from __future__ import annotations

import json
import warnings

import pytest
from typer.testing import CliRunner

import capeval
from capeval.cli.main import app
from capeval.errors import InputError

CAND, REFS = ["a dog runs"], [["a dog is running", "the dog runs fast"]]


def test_one_caption_with_the_default_metrics_skips_cider_d():
    with pytest.warns(UserWarning, match="default metrics skipped: cider_d: .*--cider-df"):
        r = capeval.score(CAND, REFS)
    assert "cider_d" not in r.corpus and "cider_d" not in r.signatures
    assert set(r.corpus) == {"bleu1", "bleu2", "bleu3", "bleu4", "meteor", "rouge_l"}
    assert "--cider-df" in r.details["skipped"]["cider_d"]
    # the others are the numbers they are when named
    named = capeval.score(CAND, REFS, ["bleu4", "rouge_l"])
    assert r.corpus["bleu4"] == named.corpus["bleu4"] and r.corpus["rouge_l"] == named.corpus["rouge_l"]


def test_named_cider_d_is_still_refused():
    with pytest.raises(InputError, match="1 unit gives ln"):
        capeval.score(CAND, REFS, ["bleu4", "cider_d"])


def test_two_units_or_a_df_file_score_cider_d(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = capeval.score(CAND * 2, [REFS[0], ["a cat"]])
    assert "cider_d" in r.corpus and "skipped" not in r.details
    df = tmp_path / "df.json"
    capeval.score(["a", "b"], [["a dog"], ["a cat"]], ["cider_d"], options={"cider_d": {"save_df": str(df)}})
    r = capeval.score(CAND, REFS, options={"cider_d": {"df": str(df)}})
    assert "cider_d" in r.corpus


def test_cli_one_caption_prints_the_skip(tmp_path):
    p = tmp_path / "one.jsonl"
    p.write_text(json.dumps({"id": "1", "candidate": CAND[0], "references": REFS[0]}) + "\n")
    res = CliRunner().invoke(app, ["score", "-i", str(p), "-q"], env={"COLUMNS": "400"})
    assert res.exit_code == 0, res.output
    assert "skipped cider_d" in res.output and "--cider-df" in res.output and "bleu4" in res.output
    res = CliRunner().invoke(app, ["score", "-i", str(p), "-q", "-m", "bleu4,cider_d"])
    assert res.exit_code == 2 and "1 unit gives ln" in res.output
