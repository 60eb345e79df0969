"""A mistyped option or metric name gets "Did you mean ...?" (exit 2, no traceback), in every
command and subcommand: case, ``_`` for ``-`` and close spellings; a long option written with
one dash is named with two."""
from __future__ import annotations

import pytest
import typer.main
from typer.testing import CliRunner

from capeval.cli.main import app

runner = CliRunner()
EXAMPLE = ["-i", "examples/captions.jsonl"]


@pytest.mark.parametrize("args, message", [
    (["score", *EXAMPLE, "--metric", "bleu4"], "No such option: --metric. Did you mean --metrics?"),
    (["score", *EXAMPLE, "--METRICS", "bleu4"], "No such option: --METRICS. Did you mean --metrics?"),
    (["score", *EXAMPLE, "--cider_df", "x"], "No such option: --cider_df. Did you mean --cider-df?"),
    (["score", *EXAMPLE, "--job", "2"], "No such option: --job. Did you mean --jobs?"),
    (["score", *EXAMPLE, "-metrics", "bleu4"],
     "No such option: -metrics. Did you mean --metrics? (with one dash it reads as -m etrics)"),
    (["score", "-input=x.jsonl"], "No such option: -input=x.jsonl. Did you mean --input=x.jsonl?"),
    (["--verison"], "No such option: --verison. Did you mean --version?"),
    (["-version"], "No such option: -version. Did you mean --version?"),
    (["metrics", "--jsn"], "No such option: --jsn. Did you mean --json?"),
    (["models", "list", "--jsn"], "Did you mean"),
    (["scor"], "Did you mean 'score'?"),
])
def test_mistyped_options_get_a_suggestion(args, message):
    res = runner.invoke(app, args)
    text = " ".join(res.output.split())
    assert res.exit_code == 2, text
    assert message in text and "Traceback" not in text


def test_nothing_close_is_the_plain_error():
    res = runner.invoke(app, ["score", *EXAMPLE, "--zzzz"])
    assert res.exit_code == 2 and "No such option: --zzzz" in res.output and "Did you mean" not in res.output


def test_every_command_suggests():
    """Each command and subcommand (they are built by typer, then given the suggesting parser)
    suggests its own help option for ``--hepl``."""
    def walk(cmd, path):
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, [*path, name])

    paths = [path for path, _ in walk(typer.main.get_command(app), [])]
    assert len(paths) > 10
    for path in paths:
        res = runner.invoke(app, [*path, "--hepl"])
        assert res.exit_code == 2 and "Did you mean --help" in res.output, (path, res.output)


def test_bench_metric_list_tolerates_spaces_and_suggests(tmp_path):
    """``-m "bleu4, rouge_l"`` names rouge_l (not " rouge_l"), and a mistyped name gets a
    suggestion before any benchmark is read."""
    from capeval.cli.bench import _metric_request

    assert _metric_request("bleu4, rouge_l,", [], [])["metric_names"] == ["bleu4", "rouge_l"]
    res = runner.invoke(app, ["bench", "flickr8k-expert", "-m", "bleu4, CIDEr", "--root", str(tmp_path)])
    assert res.exit_code == 2 and "did you mean cider?" in res.output, res.output
