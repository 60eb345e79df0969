"""A user's own human judgments (``capeval bench --file``): the three kinds, the named benchmarks'
numbers from their exported rows, and every malformed row refused by name."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from capeval.data.judgment_files import load_judgments_file, write_judgments_file
from capeval.data.records import CorrelationTable, PairwiseTable, SystemTable
from capeval.errors import InputError
from capeval.metaeval.runner import run_benchmark

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "judgments"


@pytest.mark.parametrize(("name", "kind"), [("ratings.jsonl", CorrelationTable), ("pairwise.csv", PairwiseTable),
                                            ("systems.jsonl", SystemTable)])
def test_each_example_file_is_its_kind(name, kind):
    table = load_judgments_file(EXAMPLES / name)
    assert isinstance(table, kind)
    digest = hashlib.sha256((EXAMPLES / name).read_bytes()).hexdigest()
    assert table.protocol["file"] == f"sha256:{digest}"


@pytest.mark.parametrize("name", ["ratings.jsonl", "pairwise.csv", "systems.jsonl"])
def test_bench_file_runs_and_signs_with_the_files_digest(name, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from capeval.cli.main import app

    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out.json"
    res = CliRunner().invoke(app, ["bench", "--file", str(EXAMPLES / name), "-m", "bleu4,cider_d", "-q",
                                   "--json", str(out)])
    assert res.exit_code == 0, res.output
    digest = hashlib.sha256((EXAMPLES / name).read_bytes()).hexdigest()
    assert digest in out.read_text(encoding="utf-8")


def test_the_csv_example_reads_quoted_commas_and_a_short_reference_list():
    table = load_judgments_file(EXAMPLES / "pairwise.csv")
    assert table.candidates_a[3] == "a bird, perched on a branch"
    assert table.references[3] == ["a bird on a tree branch"]  # the empty ref2 cell is no reference
    assert table.labels.tolist() == [0.0, 1.0, 0.5, 0.0]


def _same_experiment(a, b) -> None:
    assert a.n == b.n
    for metric, ours in b.results.items():
        theirs = a.results[metric]
        if isinstance(ours, dict):  # correlation: statistic -> Correlation
            assert {s: c.value for s, c in ours.items()} == {s: c.value for s, c in theirs.items()}, metric
        else:  # pairwise: accuracies, counts and ties per category
            assert (ours.accuracy, ours.correct, ours.ties) == (theirs.accuracy, theirs.correct, theirs.ties), metric


@pytest.mark.needs("data")
@pytest.mark.parametrize("name", ["flickr8k-expert", "pascal50s"])
def test_exported_rows_give_the_named_benchmarks_numbers(name, tmp_path, monkeypatch):
    from capeval import data

    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    table = data.load(name)
    path = write_judgments_file(table, tmp_path / f"{name}.jsonl")
    metrics = ["bleu4", "rouge_l", "cider_d"]
    named = run_benchmark(name, metrics)
    mine = run_benchmark(None, metrics, file=path, statistic=getattr(table, "statistic", None))
    _same_experiment(named.experiment, mine.experiment)
    assert mine.metric_signatures == named.metric_signatures
    assert "|file:sha256:" in str(mine.signature())


def _write(tmp_path: Path, rows: list, suffix: str = ".jsonl") -> Path:
    p = tmp_path / f"j{suffix}"
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return p


RATING = {"candidate": "a dog", "references": ["a dog runs"], "human": 3}
PAIR = {"a": "a dog", "b": "a cat", "references": ["a dog runs"], "preferred": "a"}


@pytest.mark.parametrize(("rows", "message"), [
    ([RATING, {**RATING, "human": "NaN"}], r"j.jsonl:2: human rating is 'NaN'"),
    ([RATING, {"candidate": "x", "references": ["y"]}], r"j.jsonl:2: missing field 'human'"),
    ([RATING, {**RATING, "references": "a dog runs"}], r"j.jsonl:2: 'references' must be a non-empty list"),
    ([RATING, {**RATING, "references": []}], r"j.jsonl:2: 'references' must be a non-empty list"),
    ([RATING, {**RATING, "candidate": 7}], r"j.jsonl:2: 'candidate' must be text"),
    ([RATING, {**RATING, "candidate": "  "}], r"candidate of row 1 .* is empty"),
    ([RATING, '["a dog", ["a dog runs"], 3]'], r"j.jsonl:2: expected a JSON object \(one object per line\)"),
    ([RATING, {**RATING, "human": True}], r"j.jsonl:2: human rating True is not a number"),
    ([RATING, {**RATING, "image": "a\x00.jpg"}], r"j.jsonl:2: 'image' must be a file name"),
    ([PAIR, {**PAIR, "preferred": "c"}], r"j.jsonl:2: preferred 'c' is not a number"),
    ([PAIR, {**PAIR, "preferred": 2}], r"j.jsonl:2: preferred is 2; expected"),
    ([{"id": 1, "text": "x"}], r"match no judgment kind"),
    ([], r"no rows"),
])
def test_a_malformed_row_is_refused_by_name(rows, message, tmp_path):
    with pytest.raises(InputError, match=message):
        load_judgments_file(_write(tmp_path, rows))


def _system_rows(**change):
    rows = [{"system": s, "image_id": i, "candidate": f"{s} caption {i}", "references": [f"ref {i}"], "human": h}
            for s, h in (("s1", 0.5), ("s2", 0.7)) for i in ("1", "2")]
    for key, (row, value) in change.items():
        rows[row][key] = value
    return rows


@pytest.mark.parametrize(("change", "message"), [
    ({"human": (1, 0.9)}, r"system 's1' has human score 0.9 here and 0.5"),
    ({"references": (2, ["other"])}, r"the references of image '1' differ"),
    ({"image_id": (1, "1")}, r"system 's1' has a second caption for image '1'"),
])
def test_inconsistent_system_rows_are_refused(change, message, tmp_path):
    with pytest.raises(InputError, match=message):
        load_judgments_file(_write(tmp_path, _system_rows(**change)))


def test_a_system_missing_an_image_is_refused(tmp_path):
    rows = _system_rows()[:-1]
    with pytest.raises(InputError, match=r"system 's2' has no caption for image '2'"):
        load_judgments_file(_write(tmp_path, rows))


def test_csv_problems_are_named(tmp_path):
    p = tmp_path / "j.csv"
    p.write_text("candidate,human,human\nx,1,2\n", encoding="utf-8")
    with pytest.raises(InputError, match="'human' appear more than once"):
        load_judgments_file(p)
    p.write_text("candidate,ref1,human\na dog,a dog runs,1\na cat,2\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"j.csv:3: 2 cells for 3 columns"):
        load_judgments_file(p)


def test_other_suffixes_and_kinds_are_refused(tmp_path):
    with pytest.raises(InputError, match="judgment files are .jsonl"):
        load_judgments_file(_write(tmp_path, [RATING], ".txt"))
    with pytest.raises(InputError, match="unknown judgment kind"):
        load_judgments_file(_write(tmp_path, [RATING]), kind="votes")


def test_parquet_reads_as_jsonl(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = [RATING, {**RATING, "candidate": "a cat", "human": 1.5}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "j.parquet")
    a, b = load_judgments_file(tmp_path / "j.parquet"), load_judgments_file(_write(tmp_path, rows))
    assert a.candidates == b.candidates and np.array_equal(a.human, b.human)  # parsed numbers, no arithmetic


def test_a_name_and_a_file_together_are_refused():
    with pytest.raises(InputError, match="not both"):
        run_benchmark("pascal50s", ["bleu4"], file=EXAMPLES / "ratings.jsonl")


@pytest.mark.needs("data")
def test_a_file_of_a_training_benchmarks_rows_is_seen_by_its_contents(tmp_path):
    from capeval import data
    from capeval.metaeval.seen import seen_reasons_of_table

    rows = data.load("flickr8k-expert")
    table = load_judgments_file(_write(tmp_path, [
        {"candidate": rows.candidates[0], "references": rows.references[0], "human": 1},
        {"candidate": "a wholly new caption", "references": ["x y"], "human": 2}]))
    assert seen_reasons_of_table(table, {"trained_on": ["flickr8k-expert"]}) == ["overlap=flickr8k-expert"]
    fresh = load_judgments_file(_write(tmp_path, [{"candidate": "a wholly new caption", "references": ["x y"],
                                                   "human": 2}]))
    assert seen_reasons_of_table(fresh, {"trained_on": ["flickr8k-expert"]}) == []
