"""User and exception text is printed as written by every command, never read as Rich markup:
square brackets survive ("[b]x", the extra in "pip install -e '.[ray]'") and "[/b]" raises no
MarkupError."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from capeval.cli.main import app

runner = CliRunner()
MARKUP = ["[/b]", "[b]x", "[red]"]


def _run(args: list[str]):
    res = runner.invoke(app, args, env={"COLUMNS": "400"})
    # a crash inside Rich (MarkupError) is an exception other than typer's exit
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"{args}: {res.exception!r}\n{res.output}") from res.exception
    assert "MarkupError" not in res.output and "Traceback" not in res.output, res.output
    return res


def _flat(text: str) -> str:
    # long messages wrap at the console width: compare without the line breaks
    return text.replace("\n", "")


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("mark", MARKUP)
def test_score_duplicate_id(tmp_path, mark):
    # The reproducer: a duplicate id holding markup.
    p = _jsonl(tmp_path / "d.jsonl", [{"id": mark, "candidate": "a dog", "references": ["a dog"]},
                                      {"id": mark, "candidate": "two cats", "references": ["two cats"]}])
    res = _run(["score", "--input", str(p), "-m", "bleu1", "-q"])
    assert res.exit_code == 2
    assert repr(mark) in _flat(res.output)


@pytest.mark.parametrize("mark", MARKUP)
def test_score_paths_options_and_titles(tmp_path, mark):
    missing = tmp_path / f"in{mark}put.jsonl"
    res = _run(["score", "--input", str(missing), "-m", "bleu1"])
    assert res.exit_code == 2 and f"in{mark}put.jsonl" in _flat(res.output)

    res = _run(["score", "--input", str(missing), "-m", f"bleu1,{mark}"])
    assert res.exit_code == 2 and mark in _flat(res.output)

    d = tmp_path / f"dir{mark}"  # "[/b]" makes a folder "dir[" holding "b]"
    (d / f"c{mark}.jsonl").parent.mkdir(parents=True, exist_ok=True)
    p = _jsonl(d / f"c{mark}.jsonl", [{"id": "1", "candidate": f"a dog {mark}", "references": [f"a dog {mark}"]}])
    res = _run(["score", "--input", str(p), "-m", "bleu1", "-O", f"{mark}=1"])
    assert res.exit_code == 2 and f"{mark}=1" in _flat(res.output)
    out = d / f"o{mark}.json"  # "[/b]": a file "b].json" in a folder "o[" that --mkdirs creates
    res = _run(["score", "--input", str(p), "-m", "bleu1", "-o", str(out), "--mkdirs"])
    assert res.exit_code == 0, res.output
    flat = _flat(res.output)
    assert f"({p.name})" in flat  # the table title
    assert f"written to {out}" in flat


def test_help_and_metrics_print_brackets():
    res = _run(["score", "--help"])
    assert "pip install -e '.[ray]'" in _flat(res.output)
    res = _run(["metrics"])
    assert res.exit_code == 0
    assert "[0, 1]" in res.output


@pytest.mark.parametrize("mark", MARKUP)
def test_bench(tmp_path, mark):
    res = _run(["bench", mark, "-m", "bleu1", "-q"])
    assert res.exit_code != 0 and mark in _flat(res.output)
    res = _run(["bench", "pascal50s", "-m", "bleu1", "-q", "-D", mark])
    assert res.exit_code == 2 and mark in _flat(res.output)
    res = _run(["bench", "pascal50s", "-m", "bleu1", "-q", "-O", mark])
    assert res.exit_code == 2 and mark in _flat(res.output)
    res = _run(["combine", mark, "-m", "bleu1,bleu4", "--root", str(tmp_path)])
    assert res.exit_code != 0


@pytest.mark.parametrize("mark", MARKUP)
def test_data_models_train_pregen_explain(tmp_path, mark):
    res = _run(["data", "verify", mark, "--root", str(tmp_path)])
    assert res.exit_code != 0 and mark in _flat(res.output)
    res = _run(["models", "install", mark])
    assert res.exit_code != 0 and mark in _flat(res.output)
    res = _run(["train", mark, "--out", str(tmp_path / "m.npz"), "--root", str(tmp_path)])
    assert res.exit_code != 0 and mark in _flat(res.output)
    res = _run(["pregen", "score", "--probs", str(tmp_path / f"p{mark}.npz")])
    assert res.exit_code == 2 and f"p{mark}.npz" in _flat(res.output)
    res = _run(["pregen", "analyse", str(tmp_path / f"r{mark}.csv")])
    assert res.exit_code != 0 and f"r{mark}.csv" in _flat(res.output)
    res = _run(["explain", "-c", f"a dog {mark}", "-r", f"a dog {mark}", "-m", f"{mark}"])
    assert res.exit_code == 2 and mark in _flat(res.output)
    res = _run(["explain", "-c", "a dog", "-r", "a dog", "-m", "bleu1"])
    assert res.exit_code == 2 and "'bleu1' gives no explanations" in _flat(res.output)
