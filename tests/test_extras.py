"""capeval.extras: the pip extras the code checks, named all at once before any work."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import capeval
from capeval import extras
from capeval.errors import ResourceNotFound
from capeval.metrics.registry import family_for, list_metrics

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
OPTIONAL = PYPROJECT["project"]["optional-dependencies"]


def test_extra_names_match_pyproject_and_all_covers_them():
    assert set(extras.EXTRA_MODULES) <= set(OPTIONAL)
    (line,) = OPTIONAL["all"]
    listed = set(re.fullmatch(r"capeval\[(.*)\]", line).group(1).split(","))
    assert listed == set(OPTIONAL) - {"all", "test"}


def test_every_family_names_known_extras():
    for m in list_metrics():
        assert set(family_for(m.name).extras) <= set(extras.EXTRA_MODULES), m.name
    assert family_for("learned").extras == ("semantic", "bertscore")
    assert family_for("qace_ref").extras == ("semantic", "bertscore")
    assert family_for("bleu4").extras == ()


def test_one_error_names_every_missing_extra(monkeypatch):
    monkeypatch.setattr(extras, "_importable", lambda m: m not in {"spacy", "torch"})
    with pytest.raises(ResourceNotFound) as err:
        capeval.score(["a dog"], [["a dog"]], ["bleu4", "learned", "qace_ref"])
    msg = str(err.value)
    # both extras, for both metrics, and one command installing them together
    assert "learned needs [semantic] (spacy missing), [bertscore] (torch missing)" in msg
    assert "qace_ref" in msg
    assert "pip install -e '.[semantic,bertscore]'" in msg


def test_present_extras_pass(monkeypatch):
    monkeypatch.setattr(extras, "_importable", lambda m: True)
    extras.require({"learned": ("semantic", "bertscore")})
    assert extras.missing_extras(["semantic", "semantic"]) == []
    monkeypatch.setattr(extras, "_importable", lambda m: False)
    assert extras.missing_extras(["semantic", "semantic", "java"]) == ["semantic", "java"]


def test_metrics_command_shows_extras_and_readiness(monkeypatch):
    from typer.testing import CliRunner

    from capeval.cli.main import app

    monkeypatch.setattr(extras, "_importable", lambda m: m != "ot")
    res = CliRunner().invoke(app, ["metrics"], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    wmd = next(line for line in res.output.splitlines() if line.startswith("│ wmd "))
    assert "semantic" in wmd and "no: semantic" in wmd
    bleu = next(line for line in res.output.splitlines() if line.startswith("│ bleu4 "))
    assert "│ yes " in bleu
    assert "pip install -e '.[semantic]'" in res.output.replace("\n", "")
