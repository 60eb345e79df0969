"""Fault injection on inputs that used to pass silently or end in a raw traceback (issue 28,
items 18 and 19): each is now refused with a named error, exit status 2 on the command line."""
from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import capeval
from capeval.cli.main import app
from capeval.errors import InputError

ROWS = [{"id": "a", "candidate": "a dog runs", "references": ["a dog runs fast"]},
        {"id": "b", "candidate": "two cats", "references": ["two cats sleep"]}]


@pytest.fixture
def rows(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return p


def _refused(*args, match):
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert match in " ".join(res.output.split()), res.output
    return res


@pytest.mark.parametrize("option,match", [
    ("cider_d.sigmaa=3", "unknown option(s) 'sigmaa' for cider_d"),  # a family not requested
    ("meteor.timeout=NaN", "timeout must be a positive, finite number"),
    ('meteor.timeout="abc"', "timeout must be a positive, finite number"),
    ("meteor.startup_timeout=-1", "startup_timeout must be a positive, finite number"),
])
def test_options_are_checked_even_for_families_not_run(rows, option, match):
    metric = "meteor" if option.startswith("meteor.") else "bleu4"
    _refused("score", "--input", str(rows), "-m", metric, "-O", option, "-q", match=match)


def test_api_checks_options_of_families_not_requested():
    with pytest.raises(InputError, match="sigmaa"):
        capeval.score(["a dog"], [["a dog"]], ["bleu4"], options={"cider_d": {"sigmaa": 3}})


def test_bench_checks_options_before_reading_its_cache(tmp_path):
    _refused("bench", "toy-corr", "-m", "bleu4", "-O", "cider_d.sigmaa=3", "--no-cache", match="sigmaa")


def test_chunk_size_zero_is_refused(rows):
    res = CliRunner().invoke(app, ["score", "--input", str(rows), "-m", "bleu4", "--chunk-size", "0", "-q"])
    assert res.exit_code == 2 and "--chunk-size" in res.output


def test_complex_ratings_are_refused():
    from capeval.data.records import CorrelationTable
    from capeval.stats.correlation import correlate

    with pytest.raises(InputError, match=r"y\[1\] is 1j"):
        correlate([1, 2, 3, 4], np.array([2, 1j, 3, 4]))
    with pytest.raises(InputError, match="row 1 is 1j"):
        CorrelationTable("t", ["a", "b", "c"], [["a"], ["b"], ["c"]], [1, 1j, 2], ["0", "1", "2"],
                         "kendall_tau_c", {"dataset": "t"})


def test_repeated_csv_header_is_refused(tmp_path):
    p = tmp_path / "joined.csv"
    p.write_text("id,candidate,ref1\na,a dog,a dog runs\nid,candidate,ref1\nb,two cats,two cats sleep\n",
                 encoding="utf-8")
    _refused("score", "--input", str(p), "-m", "bleu4", "-q", match="repeats the header row")


def test_jsonl_id_past_the_integer_digit_limit(tmp_path):
    p = tmp_path / "big.jsonl"
    p.write_text(json.dumps({"candidate": "a dog", "references": ["a dog"]})[:-1] + ', "id": ' + "1" * 4400 + "}\n",
                 encoding="utf-8")
    _refused("score", "--input", str(p), "-m", "bleu4", "-q", match="big.jsonl:1: unreadable JSON")


def test_cider_df_with_an_astronomical_unit_count(rows, tmp_path):
    from capeval.dffile import FORMAT

    df = tmp_path / "df.json"
    df.write_text('{"format": ' + json.dumps(FORMAT) + ', "n_units": 1' + "0" * 400 + ', "df": {"a": 1}}',
                  encoding="utf-8")
    _refused("score", "--input", str(rows), "-m", "cider_d", "--cider-df", str(df), "-q",
             match="an integer of 401 digits; integers in capeval files are limited to 2**53")


@pytest.mark.parametrize("flag", ["--cider-df", "--save-cider-df"])
def test_a_df_file_for_a_run_with_no_family_taking_it_is_refused(rows, tmp_path, flag):
    # Silently ignored before: --save-cider-df wrote nothing with exit status 0.
    df = tmp_path / "df.json"
    if flag == "--cider-df":
        df.write_text("{}", encoding="utf-8")
    _refused("score", "--input", str(rows), "-m", "bleu4,rouge_l", flag, str(df), "-q", "--overwrite",
             match=f"{flag} is for the families that take CIDEr's df (cider, cider_d, spider); "
                   "none of the requested metrics is one (bleu4, rouge_l)")
    assert flag == "--cider-df" or not df.exists()
