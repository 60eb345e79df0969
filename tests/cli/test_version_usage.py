"""``capeval --version``, and usage lines that name arguments as NAME, SRC, DEST (typer writes
a required argument as ``{name}``)."""
from __future__ import annotations

import re

import typer.main
from typer.testing import CliRunner

from capeval import __version__
from capeval.cli.main import app

runner = CliRunner()


def test_version():
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0
    assert res.output == f"capeval {__version__}\n"
    assert "--version" in runner.invoke(app, ["--help"]).output


def _usage(args: list[str]) -> str:
    res = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return next(line for line in res.output.splitlines() if line.startswith("Usage:"))


def test_usage_lines_name_arguments_in_capitals():
    assert _usage(["bench"]) == "Usage: capeval bench [OPTIONS] [NAME]"  # optional: --file names the judgments
    assert _usage(["combine"]) == "Usage: capeval combine [OPTIONS] NAME"
    assert _usage(["train"]) == "Usage: capeval train [OPTIONS] MODEL"
    assert _usage(["compat", "convert-cider-df"]) == "Usage: capeval compat convert-cider-df [OPTIONS] SRC DEST"
    assert _usage(["models", "install"]) == "Usage: capeval models install [OPTIONS] NAME"
    assert _usage(["data", "verify"]).endswith(" [OPTIONS] [NAME]")  # optional: one pair of brackets


def test_no_usage_line_or_argument_help_shows_braces_or_lower_case_names():
    def walk(cmd, path):
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, [*path, name])

    for path, cmd in walk(typer.main.get_command(app), []):
        usage = _usage(path)
        assert "{" not in usage, usage
        for word in re.findall(r"[\[]?([A-Za-z_]+)[\]]?(?:\.\.\.)?", usage.split("[OPTIONS]")[-1]):
            assert word.isupper(), usage


def test_missing_argument_error_names_it_in_capitals():
    res = runner.invoke(app, ["models", "install"])
    assert res.exit_code == 2
    assert "Missing argument 'NAME'" in res.output
