"""A mistyped output path creates no folder: every command that writes files refuses an output
whose folder is missing (exit 2, naming the folder and the output), before any work, unless
``--mkdirs`` asks for the folders."""
from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from capeval.cli.main import app
from capeval.errors import OutputError
from capeval.outputs import check_outputs, missing_folders

runner = CliRunner()


def _rows(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps({"id": str(i), "candidate": c, "references": [r]}) + "\n"
                         for i, (c, r) in enumerate([("a dog runs", "a dog is running"), ("two cats", "cats")])),
                 encoding="utf-8")
    return p


def _refused(res, folder, output) -> None:
    assert res.exit_code == 2, res.output
    flat = " ".join(res.output.split())
    assert f"output folder not found: {folder} (for {output})" in flat, flat
    assert "--mkdirs" in flat
    assert not folder.exists()
    assert "Traceback" not in res.output


def _pregen_inputs(tmp_path):
    from capeval.pregen import tiers
    from capeval.pregen.results import ResultsTable, write_results
    from capeval.pregen.tokens import TokenScores

    TokenScores.from_nested([[[(0.5, 0), (0.25, 3)], [(1.0, 0)]], [[(0.125, 1), (0.5, 0)]]]).save_npz(tmp_path / "p.npz")
    rng = np.random.default_rng(0)
    keys = [{"dataset": d, "architecture": "init", "run": "1", "num_strata": "1", "stratum": "0"}
            for d in ["x"] * 5 + ["y"] * 5]
    y = rng.uniform(size=10)
    write_results(tmp_path / "data.txt", ResultsTable(keys, {"CIDEr": y}, {tiers.BEST: y + rng.normal(0, .05, 10)}))


@pytest.mark.parametrize("command", ["score -o", "score --save-cider-df", "bench --report", "bench --json",
                                     "combine --json", "pregen score -o", "train --out", "compat convert-cider-df"])
def test_each_command_refuses_a_missing_folder(tmp_path, command):
    _pregen_inputs(tmp_path)
    gone = tmp_path / "typo" / "deeper"
    out = gone / "out.json"
    args = {
        "score -o": ["score", "-i", str(_rows(tmp_path)), "-m", "bleu4", "-o", str(out)],
        "score --save-cider-df": ["score", "-i", str(_rows(tmp_path)), "-m", "cider_d", "--save-cider-df", str(out)],
        "bench --report": ["bench", "flickr8k-expert", "-m", "bleu4", "--report", str(out)],
        "bench --json": ["bench", "flickr8k-expert", "-m", "bleu4", "--json", str(out)],
        "combine --json": ["combine", "flickr8k-expert", "-m", "bleu4,cider_d", "--json", str(out)],
        "pregen score -o": ["pregen", "score", "-p", str(tmp_path / "p.npz"), "-o", str(out)],
        "train --out": ["train", "linear", "--out", str(out)],
        "compat convert-cider-df": ["compat", "convert-cider-df", str(tmp_path / "df.p"), str(out)],
    }[command]
    _refused(runner.invoke(app, args, env={"COLUMNS": "300"}), gone, out)


def test_mkdirs_creates_them(tmp_path):
    out = tmp_path / "new" / "deeper" / "out.json"
    res = runner.invoke(app, ["score", "-i", str(_rows(tmp_path)), "-m", "bleu4", "-o", str(out), "--mkdirs", "-q"])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text(encoding="utf-8"))["corpus"]["bleu4"] >= 0

    _pregen_inputs(tmp_path)
    out = tmp_path / "p1" / "p2" / "o.json"
    res = runner.invoke(app, ["pregen", "score", "-p", str(tmp_path / "p.npz"), "-o", str(out), "--mkdirs"])
    assert res.exit_code == 0, res.output
    assert out.is_file()


def test_pregen_out_dir_is_created_but_not_the_folders_above_it(tmp_path):
    _pregen_inputs(tmp_path)
    base = ["pregen", "analyse", str(tmp_path / "data.txt"), "-k", "1"]
    res = runner.invoke(app, [*base, "-o", str(tmp_path / "out")])  # --out-dir itself is the output
    assert res.exit_code == 0, res.output
    assert (tmp_path / "out" / "summary.json").is_file()
    gone = tmp_path / "typo"
    res = runner.invoke(app, [*base, "-o", str(gone / "out")], env={"COLUMNS": "300"})
    _refused(res, gone, gone / "out" / "correlations_CIDEr.txt")
    res = runner.invoke(app, [*base, "-o", str(gone / "out"), "--mkdirs"])
    assert res.exit_code == 0, res.output
    assert (gone / "out" / "summary.json").is_file()


def test_check_outputs_names_every_missing_folder_once(tmp_path):
    a, b = tmp_path / "a" / "x.json", tmp_path / "b" / "y.json"
    with pytest.raises(OutputError) as err:
        check_outputs([a, (tmp_path / "a" / "x.signatures.json", a), b], mkdirs_flag="--mkdirs")
    msg = str(err.value)
    assert msg.count(str(tmp_path / "a")) == 2 and f"{tmp_path / 'b'} (for {b})" in msg  # folder and its output
    assert "create them first, or pass --mkdirs to create them" in msg
    with pytest.raises(OutputError) as err:
        check_outputs([a])  # a command without the option says only what to do
    assert "--mkdirs" not in str(err.value) and "create it first" in str(err.value)
    check_outputs([a, b], mkdirs=True)
    assert missing_folders([tmp_path / "x.json"]) == {}
    (tmp_path / "file").write_text("")
    assert missing_folders([tmp_path / "file" / "x.json"]) == {tmp_path / "file": tmp_path / "file" / "x.json"}
