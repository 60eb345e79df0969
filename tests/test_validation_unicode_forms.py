"""Unicode normalisation (issue 28, item 21): the default compares texts as given, as
pycocoevalcap does (an NFD candidate against NFC references loses its accented words), warns
when the inputs mix the two forms, and ``normalize="nfc"`` composes every text first and says
so in the signatures."""
from __future__ import annotations

import json
import unicodedata
import warnings

import pytest
from typer.testing import CliRunner

import capeval
from capeval.errors import InputError
from capeval.validation import mixed_forms

REF = "a man in a café near the école with a dog"
NFD = unicodedata.normalize("NFD", REF)
CANDS = [NFD, "two cats sleep on a mat"]
REFS = [[REF, "a man and a dog at a café"], ["two cats sleep on a mat", "cats asleep"]]


def test_default_is_exact_and_warns_on_mixed_forms():
    with pytest.warns(UserWarning, match="mix Unicode forms: 1 text"):
        raw = capeval.score(CANDS, REFS, ["bleu4"])
    composed = capeval.score([REF, CANDS[1]], REFS, ["bleu4"])
    assert raw.corpus["bleu4"] < composed.corpus["bleu4"]  # the accented words do not match
    assert "norm" not in raw.signatures["bleu4"]


def test_nfc_composes_and_is_in_the_signature():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about once normalised
        res = capeval.score(CANDS, REFS, ["bleu4", "meteor"] if _meteor() else ["bleu4"], normalize="nfc")
    want = capeval.score([REF, CANDS[1]], REFS, ["bleu4"])
    assert res.corpus["bleu4"] == want.corpus["bleu4"]
    assert all("+norm=nfc|" in s for s in res.signatures.values())


def _meteor() -> bool:
    try:
        import pycocoevalcap  # noqa: F401
    except ImportError:
        return False
    return True


def test_one_form_alone_or_ascii_is_not_mixed():
    assert mixed_forms([NFD], [[NFD]]) is None
    assert mixed_forms([REF], [[REF, "plain ascii"]]) is None
    assert mixed_forms([NFD], [[REF]]) is not None
    with pytest.raises(InputError, match="unknown Unicode normalisation 'nfkc'"):
        capeval.score(CANDS, REFS, ["bleu4"], normalize="nfkc")


def test_cli_normalize(tmp_path):
    from capeval.cli.main import app

    p = tmp_path / "rows.jsonl"
    p.write_text("".join(json.dumps({"id": str(i), "candidate": c, "references": r}) + "\n"
                         for i, (c, r) in enumerate(zip(CANDS, REFS))), encoding="utf-8")
    res = CliRunner().invoke(app, ["score", "--input", str(p), "-m", "bleu4", "-q", "--normalize", "nfc"])
    assert res.exit_code == 0, res.output
    assert "+norm=nfc" in res.output


def test_streamed_runs_warn_once_in_total(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_text("".join(json.dumps({"id": str(i), "candidate": c, "references": r}) + "\n"
                         for i, (c, r) in enumerate(zip(CANDS, REFS))), encoding="utf-8")
    with pytest.warns(UserWarning, match="mix Unicode forms") as seen:
        res = capeval.score_stream(p, ["bleu4"], chunk_size=1)
    assert sum("Unicode forms" in str(w.message) for w in seen) == 1
    assert res.corpus["bleu4"] == capeval.score(CANDS, REFS, ["bleu4"]).corpus["bleu4"]
