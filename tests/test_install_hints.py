"""No message, help text or document tells a user to install capeval by name with an extra
(``pip install 'capeval[X]'``): capeval is not on PyPI, so that command fails. Every hint goes
through :func:`capeval.extras.install_hint`, which names the checkout (or wheel) form.

Checked on the sources, the docs and the README (with line breaks joined, so a hint split
across lines or string pieces is seen whole), on the output of every command's ``--help``
(every command and subcommand of the typer app, found by walking it) and on ``capeval models
list``, which prints every resource's hint."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from capeval.cli.main import app
from capeval.extras import install_hint

ROOT = Path(__file__).resolve().parents[1]
#: pip/pip3 install [options] capeval[...] with or without quotes, and any quoted or
#: code-marked requirement capeval[...] (a hint's second half: "or 'capeval[semantic]'").
BAD = re.compile(r"""pip3?\s+install\s+(?:-\S+\s+)*['"]?capeval\[|['"`]capeval\[""")


def _bad(text: str) -> list[str]:
    flat = re.sub(r"\s+", " ", text)
    return [flat[max(m.start() - 60, 0):m.end() + 30] for m in BAD.finditer(flat)]


def test_the_pattern_catches_the_bad_forms_and_passes_the_hint():
    for bad in ("pip install 'capeval[java]'", "pip install capeval[ray]", 'pip install -U "capeval[x]"',
                "(or 'capeval[semantic]')", "pip install\n    'capeval[semantic,bertscore]'",
                "``pip install capeval[report]``"):
        assert _bad(bad), bad
    assert not _bad(install_hint(["semantic"], ["wordnet"]))
    assert not _bad("pip install -e '.[coco]'")


def _texts():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    files += sorted((ROOT / "src" / "capeval").rglob("*.py"))
    return files


def test_sources_docs_and_readme():
    found = {str(p.relative_to(ROOT)): hits for p in _texts() if (hits := _bad(p.read_text(encoding="utf-8")))}
    assert not found, found


def _commands():
    def walk(cmd, path):
        yield path
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            yield from walk(sub, [*path, name])

    return list(walk(typer.main.get_command(app), []))


def test_every_command_is_found():
    paths = {" ".join(p) for p in _commands()}
    assert {"", "score", "metrics", "bench", "combine", "models list", "models install", "data list",
            "compat convert-cider-df", "pregen score", "train"} <= paths


@pytest.mark.parametrize("columns", ["80", "400"])
def test_every_help_text(columns):
    runner = CliRunner()
    found = {}
    for path in _commands():
        res = runner.invoke(app, [*path, "--help"], env={"COLUMNS": columns})
        assert res.exit_code == 0, (path, res.output)
        if hits := _bad(res.output):
            found[" ".join(path) or "capeval"] = hits
    assert not found, found


def test_models_list_hints():
    runner = CliRunner()
    for args in (["models", "list"], ["models", "list", "--json"]):
        res = runner.invoke(app, args, env={"COLUMNS": "80"})
        assert res.exit_code == 0, res.output
        assert "pip install -e '.[coco]'" in res.output  # the jars' hint, in the good form
        assert not _bad(res.output), _bad(res.output)
