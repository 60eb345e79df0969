"""Bringing one's own metric to `capeval bench`: a scores file, a callable, a UserMetric subclass.

The round trip (export → score elsewhere → --scores) must give exactly the numbers of the
built-in metric it reproduces; bad scores files end in errors that name what is wrong.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

import capeval
from capeval.cli.main import app
from capeval.errors import InputError
from capeval.metaeval.runner import run_benchmark
from capeval.metaeval.tables import to_json_dict, to_markdown
from capeval.metaeval.units import export_records, unit_id
from capeval.metrics.user import UserMetric
from capeval.service.cache import ScoreCache

NO_CACHE = ScoreCache(enabled=False)

SCORER = """
import json, sys
import capeval
units = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
res = capeval.score([u["candidate"] for u in units], [u["references"] for u in units], ["bleu4"])
with open(sys.argv[2], "w", encoding="utf-8") as fh:
    for u, v in zip(units, res.per_caption["bleu4"]):
        fh.write(json.dumps({"id": u["id"], "score": float(v)}) + "\\n")
"""


def bleu4_fn(candidates, references, images):
    return capeval.score(candidates, references, ["bleu4"]).per_caption["bleu4"]


def _comparable(doc: dict, column: str) -> dict:
    """The JSON minus what may differ: the metric's name and signature, timing and cache flags."""
    doc = json.loads(json.dumps(doc).replace(f'"{column}"', '"METRIC"'))
    doc["_meta"].pop("seconds")
    doc["_meta"].pop("cached")
    doc["_signatures"].pop("metrics")
    return doc


@pytest.fixture(scope="module")
def composite_files(tmp_path_factory, data_dir):
    tmp = tmp_path_factory.mktemp("composite")
    units = tmp / "units.jsonl"
    res = CliRunner().invoke(app, ["data", "export", "composite", "-o", str(units), "--root", str(data_dir)])
    assert res.exit_code == 0, res.output
    script = tmp / "score_units.py"
    script.write_text(SCORER, encoding="utf-8")
    scored = tmp / "scored.jsonl"
    subprocess.run([sys.executable, str(script), str(units), str(scored)], check=True)
    return units, scored


@pytest.mark.data
def test_export_writes_each_distinct_unit_once(composite_files, data_dir):
    units, _ = composite_files
    recs = [json.loads(line) for line in units.read_text(encoding="utf-8").splitlines()]
    table = capeval.data.load("composite", data_dir)
    assert sum(len(r["keys"]) for r in recs) == len(table)
    assert len({r["id"] for r in recs}) == len(recs)
    for r in recs[:50]:
        assert set(r) >= {"id", "candidate", "references", "image", "benchmark", "keys"}
        for key in r["keys"]:
            i = key["row"]
            assert (table.candidates[i], table.references[i], table.images[i]) == (r["candidate"], r["references"],
                                                                                     r["image"])
            assert key["group"] == table.groups[i]
        assert r["id"] == unit_id(r["candidate"], r["references"], r["image"])


@pytest.mark.data
def test_scores_file_round_trip_equals_the_built_in_metric(composite_files, tmp_path, data_dir):
    _, scored = composite_files
    runner = CliRunner()
    out = {}
    for label, args in (("builtin", ["-m", "bleu4"]), ("user", ["--scores", f"bleu4_user={scored}"])):
        js, md = tmp_path / f"{label}.json", tmp_path / f"{label}.md"
        res = runner.invoke(app, ["bench", "composite", *args, "--no-cache", "-q", "--root", str(data_dir),
                                  "--json", str(js), "--markdown", str(md)])
        assert res.exit_code == 0, res.output
        out[label] = (json.loads(js.read_text()), md.read_text())
    builtin, user = out["builtin"], out["user"]
    assert _comparable(user[0], "bleu4_user") == _comparable(builtin[0], "bleu4")
    assert builtin[0]["bleu4"]["kendall_tau_c"] == pytest.approx(0.3054, abs=5e-4)  # DATA.md §2.3: 30.54
    sig = user[0]["_signatures"]["metrics"]["bleu4_user"]
    import hashlib

    assert sig.startswith("user:bleu4_user|file:sha256:" + hashlib.sha256(scored.read_bytes()).hexdigest())
    # The Markdown tables are the same but for the column name and the signature line.
    strip = lambda text, col: [ln.replace(col, "METRIC") for ln in text.splitlines()  # noqa: E731
                               if not ln.startswith(f"- `{col}: ")]
    assert strip(user[1], "bleu4_user") == strip(builtin[1], "bleu4")


@pytest.mark.data
def test_callable_and_subclass_routes_give_the_built_in_numbers(composite_files, data_dir):
    class Bleu4Mine(UserMetric):
        name, version = "bleu4_mine", "1"

        def score(self, candidates, references, images):
            return bleu4_fn(candidates, references, images)

    _, scored = composite_files
    res = capeval.bench("composite", ["bleu4", bleu4_fn, Bleu4Mine], root=data_dir, cache=NO_CACHE,
                        scores={"bleu4_file": scored})
    doc = to_json_dict(res)
    for other in ("bleu4_fn", "bleu4_mine", "bleu4_file"):
        assert doc[other] == doc["bleu4"]
    sigs = doc["_signatures"]["metrics"]
    assert sigs["bleu4_mine"].startswith("user:bleu4_mine|out:bleu4_mine|tok:none|") and "|mv:1|" in sigs["bleu4_mine"]
    assert "|mv:callable|" in sigs["bleu4_fn"]


# ---- bad scores files, on a synthetic table ------------------------------------------------

def _toy_units(toy_data):
    return list(export_records(toy_data["toy-corr"]))


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _good_lines(units):
    return [json.dumps({"id": u["id"], "score": float(len(u["candidate"]))}) for u in units]


def test_toy_scores_file_is_accepted_and_matches_the_callable(toy_data, tmp_path):
    units = _toy_units(toy_data)
    path = _write(tmp_path / "s.jsonl", _good_lines(units))

    def length(c, r, i):
        return [float(len(x)) for x in c]

    res = run_benchmark("toy-corr", [length], scores={"len_file": path}, cache=NO_CACHE, tokenizer="none")
    doc = to_json_dict(res)
    assert doc["len_file"] == doc["length"]
    # A CSV with the header id,score is the same file.
    csv_path = _write(tmp_path / "s.csv", ["id,score"] + [f"{u['id']},{float(len(u['candidate']))!r}" for u in units])
    res2 = run_benchmark("toy-corr", [], scores={"len_file": csv_path}, cache=NO_CACHE)
    assert to_json_dict(res2)["len_file"] == doc["length"]


@pytest.mark.parametrize("case,pattern", [
    ("missing", r"1 unit id\(s\) of toy-corr missing: 'u"),
    ("extra", r"1 id\(s\) that are not units of toy-corr: 'nope'"),
    ("duplicate", r":2: duplicate id 'u[0-9a-f]+' \(first on line 1\)"),
    ("nan", r"scores must be finite"),
    ("inf", r"scores must be finite"),
    ("non-numeric", r"score 'high' is not a number"),
    ("wrong-length", r"\d+ scores for \d+ units"),
    ("bool", r"score True is not a number"),
    ("no-id", r"expected an object with 'id' and 'score'"),
])
def test_bad_scores_files_are_refused_naming_the_problem(toy_data, tmp_path, case, pattern):
    units = _toy_units(toy_data)
    lines = _good_lines(units)
    first = json.loads(lines[0])
    if case == "missing":
        lines = lines[1:]
    elif case == "extra":
        lines.append(json.dumps({"id": "nope", "score": 1.0}))
    elif case == "duplicate":
        lines.insert(1, lines[0])
    elif case == "nan":
        lines[3] = '{"id": "%s", "score": NaN}' % json.loads(lines[3])["id"]
    elif case == "inf":
        lines[3] = '{"id": "%s", "score": 1e999}' % json.loads(lines[3])["id"]
    elif case == "non-numeric":
        lines[0] = json.dumps({"id": first["id"], "score": "high"})
    elif case == "wrong-length":
        lines = lines[: len(lines) // 2]
    elif case == "bool":
        lines[0] = json.dumps({"id": first["id"], "score": True})
    elif case == "no-id":
        lines[0] = json.dumps({"score": 1.0})
    path = _write(tmp_path / "bad.jsonl", lines)
    with pytest.raises(InputError, match=pattern):
        run_benchmark("toy-corr", [], scores={"mine": path}, cache=NO_CACHE)


@pytest.mark.parametrize("text,pattern", [
    ("id,value\na,1\n", r"expected exactly 'id,score'"),
    ("id,score\na,1,2\n", r":2: 3 cells"),
    ("id,score\na,nan\n", r"finite"),
    ("id,score\na,x\n", r"score 'x' is not a number"),
    ("", r"empty file"),
])
def test_bad_csv_scores_files(tmp_path, text, pattern):
    from capeval.scorefile import read_scores

    p = tmp_path / "bad.csv"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=pattern):
        read_scores(p)


def test_scores_cli_errors_name_the_file_and_ids(toy_data, tmp_path):
    units = _toy_units(toy_data)
    path = _write(tmp_path / "s.jsonl", _good_lines(units)[2:])
    res = CliRunner().invoke(app, ["bench", "toy-corr", "--scores", f"mine={path}", "--no-cache", "-q"])
    assert res.exit_code == 2
    assert "2 unit id(s) of toy-corr missing" in res.output and units[0]["id"] in res.output
    res = CliRunner().invoke(app, ["bench", "toy-corr", "--scores", "mine", "--no-cache", "-q"])
    assert res.exit_code == 2 and "expected NAME=FILE" in res.output
    res = CliRunner().invoke(app, ["bench", "toy-corr", "--scores", f"bleu4={path}", "--no-cache", "-q"])
    assert res.exit_code == 2 and "name of a registered metric" in res.output


def test_pairwise_and_system_tables_take_scores_files(toy_data, tmp_path):
    for name in ("toy-pairs", "toy-sys"):
        units = list(export_records(toy_data[name]))
        path = _write(tmp_path / f"{name}.jsonl", _good_lines(units))

        def length(c, r, i):
            return [float(len(x)) for x in c]

        doc = to_json_dict(run_benchmark(name, [length], scores={"len_file": path}, cache=NO_CACHE))
        assert doc["len_file"] == doc["length"], name


def test_user_callable_returning_bad_values_is_named(toy_data):
    def broken(c, r, i):
        return [float("nan")] * len(c)

    with pytest.raises(InputError, match=r"user metric 'broken': score of candidate 0 is nan"):
        run_benchmark("toy-corr", [broken], cache=NO_CACHE)

    def short(c, r, i):
        return [1.0]

    with pytest.raises(InputError, match=r"returned 1 scores for 60 candidates"):
        run_benchmark("toy-corr", [short], cache=NO_CACHE)


def test_markdown_of_a_user_column_names_its_signature(toy_data):
    def length(c, r, i):
        return np.array([float(len(x)) for x in c])

    md = to_markdown([run_benchmark("toy-corr", [length], cache=NO_CACHE)])
    assert "user:length|out:length|tok:none|" in md


def test_html_report_shows_a_scores_column(toy_data, tmp_path):
    from capeval.metaeval.report import write_report

    units = _toy_units(toy_data)
    path = _write(tmp_path / "s.jsonl", _good_lines(units))
    res = run_benchmark("toy-corr", ["bleu1"], scores={"len_file": path}, cache=NO_CACHE)
    assert res.higher_is_better == {"bleu1": True, "len_file": True}
    out = tmp_path / "r.html"
    write_report([res], out)
    html = out.read_text()
    assert "len_file" in html and "user:len_file|file:sha256:" in html


def test_scores_take_one_benchmark_at_a_time(toy_data, tmp_path):
    path = _write(tmp_path / "s.jsonl", _good_lines(_toy_units(toy_data)))
    res = CliRunner().invoke(app, ["bench", "toy-corr,toy-pairs", "--scores", f"x={path}", "--no-cache", "-q"])
    assert res.exit_code == 2 and "one at a time" in " ".join(res.output.split())


def test_scores_metric_in_python_equals_the_scores_option(toy_data, tmp_path):
    from capeval.metrics.user import scores_metric

    path = _write(tmp_path / "s.jsonl", _good_lines(_toy_units(toy_data)))
    res = run_benchmark("toy-corr", [scores_metric("from_file", path)], scores={"via_option": path},
                        cache=NO_CACHE)
    doc = to_json_dict(res)
    assert doc["from_file"] == doc["via_option"]
