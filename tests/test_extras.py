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
    assert listed == set(OPTIONAL) - {"all", "test"} - set(extras.EXTRA_ALIASES)


def test_java_is_an_alias_of_coco_and_hints_name_coco(monkeypatch):
    # `java` installs exactly what `coco` does, with the same modules, and is never suggested.
    for alias, target in extras.EXTRA_ALIASES.items():
        assert OPTIONAL[alias] == [f"capeval[{target}]"]
        assert extras.EXTRA_MODULES[alias] == extras.EXTRA_MODULES[target]
    assert OPTIONAL["coco"][0] == "pycocoevalcap==1.2"
    monkeypatch.setattr(extras, "_importable", lambda m: m != "pycocoevalcap")
    assert extras.missing_extras(["java", "coco"]) == ["coco"]
    assert extras.install_command(["java", "semantic"]) == "pip install -e '.[coco,semantic]'"
    assert extras.install_command(["coco", "semantic"], ["wordnet"]) == \
        "pip install -e '.[coco,semantic]' && capeval models install wordnet"
    assert extras.install_command([], ["wordnet"]) == "capeval models install wordnet"


def test_library_extras_give_torch_a_range_and_test_pins_it():
    # A library extra pinning torch exactly would make pip replace a user's CUDA build; `test`
    # pins the one torch the suite runs on, so the README's test command never resolves a
    # newer (multi-GB CUDA) build instead of the local CPU one.
    for name, reqs in OPTIONAL.items():
        torch = [r for r in reqs if re.match(r"torch\s*[<>=!~]", r)]
        if name == "test":
            assert torch == ["torch==2.13.0"]
        elif torch:
            (spec,) = torch
            assert "==" not in spec and ">=" in spec and "<" in spec.replace("<=", "<"), (name, spec)
    from importlib.metadata import version

    assert version("torch").split("+")[0] == "2.13.0"


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
    assert extras.missing_extras(["semantic", "semantic", "java"]) == ["semantic", "coco"]


def test_metrics_command_shows_extras_and_readiness(monkeypatch):
    from typer.testing import CliRunner

    from capeval.cli.main import app

    monkeypatch.setattr(extras, "_importable", lambda m: m != "ot")
    res = CliRunner().invoke(app, ["metrics"], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    wmd = next(line for line in res.output.splitlines() if line.startswith("wmd "))
    assert wmd.split()[-1] == "semantic*"  # needed and not installed
    bleu = next(line for line in res.output.splitlines() if line.startswith("bleu4 "))
    assert bleu.split()[-1] == "-"
    # the install command on a line of its own, so that it pastes whole
    assert "* not installed: extras semantic. Install them with:\n  pip install -e '.[semantic]'\n" in res.output


def test_meteor_names_coco_once_and_a_jar_variable_supplies_it(monkeypatch, tmp_path):
    # METEOR is a default metric: without pycocoevalcap the one error names the extra that
    # brings it (not the jar, not twice); $CAPEVAL_METEOR_JAR stands in for the package.
    assert family_for("meteor").extras == ("coco",)
    monkeypatch.delenv("CAPEVAL_METEOR_JAR", raising=False)
    monkeypatch.setattr(extras, "_importable", lambda m: m != "pycocoevalcap")
    with pytest.raises(ResourceNotFound) as err:
        capeval.score(["a dog"], [["a dog"]], ["bleu4", "meteor"])
    msg = str(err.value)
    assert msg.startswith("meteor needs [coco] (pycocoevalcap missing)") and "\n" not in msg
    assert msg.count(extras.install_command(["coco"])) == 1 and "not found" not in msg
    monkeypatch.setenv("CAPEVAL_METEOR_JAR", str(tmp_path / "meteor-1.5.jar"))
    assert extras.missing_extras(["coco"]) == []
    with pytest.raises(ResourceNotFound, match=r"\$CAPEVAL_METEOR_JAR points to a missing path"):
        capeval.score(["a dog"], [["a dog"]], ["meteor"])


def test_the_resolvers_meteor_message_names_the_resources_not_a_jar_to_run(monkeypatch):
    from capeval.resources.resolver import resolve

    real = extras.find_installed
    monkeypatch.setattr(extras, "find_installed", lambda m: None if m == "pycocoevalcap" else real(m))
    monkeypatch.delenv("CAPEVAL_METEOR_JAR", raising=False)
    with pytest.raises(ResourceNotFound) as err:
        resolve("meteor-jar")
    msg = str(err.value)
    assert msg.startswith("METEOR's resources (") and "without Java" in msg and "\n" not in msg
    assert "pip install pycocoevalcap==1.2;" in msg
