import json

import pytest

from capeval.errors import InputError
from capeval.inputs import read_coco, read_csv, read_input, read_jsonl


def test_jsonl_roundtrip(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"id": 1, "candidate": "a dog", "references": ["a dog runs"]}\n\n{"id": "b", "candidate": "x", "references": ["y", "z"]}\n')
    ids, c, r = read_jsonl(p)
    assert ids == [1, "b"] and c == ["a dog", "x"] and r == [["a dog runs"], ["y", "z"]]


def test_jsonl_errors_name_the_line(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"id": 1, "candidate": "a", "references": ["b"]}\n{"id": 1, "candidate": "a", "references": ["b"]}\n')
    with pytest.raises(InputError, match=r"x.jsonl:2: duplicate id 1"):
        read_jsonl(p)
    p.write_text('{"id": 1, "candidate": "a"}\n')
    with pytest.raises(InputError, match=r":1: missing key 'references'"):
        read_jsonl(p)


def test_jsonl_keeps_unicode_line_separators_for_validation(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text(json.dumps({"id": 1, "candidate": "a\u2028b", "references": ["c"]}, ensure_ascii=False) + "\n", encoding="utf-8")
    ids, c, r = read_jsonl(p)
    assert c == ["a\u2028b"]  # not split: validation refuses it later with the item named


def test_non_utf8_named(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(b'{"id": 1, "candidate": "caf\xe9", "references": ["x"]}\n')
    with pytest.raises(InputError, match="bad.jsonl: not valid UTF-8 .*line 1"):
        read_jsonl(p)


def test_coco_pair(tmp_path):
    res = tmp_path / "res.json"
    ann = tmp_path / "ann.json"
    res.write_text(json.dumps([{"image_id": 5, "caption": "a dog"}]))
    ann.write_text(json.dumps({"annotations": [{"image_id": 5, "caption": "a dog runs"}, {"image_id": 6, "caption": "x"}]}))
    assert read_coco(res, ann) == ([5], ["a dog"], [["a dog runs"]])
    res.write_text(json.dumps([{"image_id": 7, "caption": "a dog"}]))
    with pytest.raises(InputError, match="image_id 7 .* has no reference captions"):
        read_coco(res, ann)
    res.write_text(json.dumps([{"image_id": 5, "caption": "a"}, {"image_id": 5, "caption": "b"}]))
    with pytest.raises(InputError, match="image_id 5 has two results"):
        read_coco(res, ann)


def test_csv(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("id,candidate,ref1,ref2\na,a dog,a dog runs,\nb,\"x, y\",z,w\n")
    ids, c, r = read_csv(p)
    assert ids == ["a", "b"] and c == ["a dog", "x, y"] and r == [["a dog runs"], ["z", "w"]]


ROW = {"id": "a", "candidate": "a dog", "references": ["a dog runs"]}


@pytest.mark.parametrize("text, match", [
    (json.dumps([ROW]) + "\n", r"x.jsonl:1: expected a JSON object, got a JSON array"),
    (json.dumps([ROW], indent=1) + "\n", r"x.jsonl:1: invalid JSON"),  # a list over several lines
    (json.dumps(ROW, indent=1) + "\n", r"x.jsonl:1: invalid JSON"),  # an object over several lines
    ("5\n", r"x.jsonl:1: expected a JSON object, got int 5"),
])
def test_a_jsonl_file_holding_one_document_says_one_object_per_line(tmp_path, text, match):
    """A JSON document in a .jsonl file (a list of rows, a pretty-printed object) is named, and
    the message says what the format is: one object per line."""
    p = tmp_path / "x.jsonl"
    p.write_text(text)
    with pytest.raises(InputError, match=match) as e:
        read_jsonl(p)
    assert "A .jsonl input holds one JSON object per line" in str(e.value)


def test_a_json_list_of_rows_says_jsonl_and_coco_results_say_annotations(tmp_path):
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps([ROW]))
    with pytest.raises(InputError, match=r"rows.json: holds a JSON list of \{\"candidate\", \"references\"\} rows; "
                                         r"capeval reads such rows from a .jsonl file with one JSON object per line"):
        read_input(rows)
    res = tmp_path / "res.json"
    res.write_text(json.dumps([{"image_id": 5, "caption": "a dog"}]))
    with pytest.raises(InputError, match=r"res.json: a .json input is COCO results .* needs --annotations"):
        read_input(res)


def test_jsonl_with_annotations_says_drop_annotations(tmp_path):
    ann = tmp_path / "ann.json"
    ann.write_text(json.dumps({"annotations": [{"image_id": 5, "caption": "a dog runs"}]}))
    lines = tmp_path / "x.jsonl"
    lines.write_text(json.dumps(ROW) + "\n" + json.dumps({**ROW, "id": "b"}) + "\n")
    with pytest.raises(InputError, match=r"x.jsonl: JSONL rows carry their own references; .* Drop --annotations"):
        read_input(lines, ann)
    table = tmp_path / "x.csv"
    table.write_text("id,candidate,ref1\na,a dog,a dog runs\n")
    with pytest.raises(InputError, match=r"x.csv: CSV rows carry their own references; .* Drop --annotations"):
        read_input(table, ann)
    as_json = tmp_path / "x.json"  # JSONL under a .json name: "Extra data" to a JSON parser
    as_json.write_text(lines.read_text())
    with pytest.raises(InputError, match=r"x.json: holds several JSON values \(one per line, as JSONL\), where COCO "
                                         r"results .* is expected"):
        read_input(as_json, ann)
    res = tmp_path / "res.json"
    res.write_text(json.dumps([{"image_id": 5, "caption": "a dog"}]))
    with pytest.raises(InputError, match=r"x.json: holds several JSON values .* where a COCO captions file"):
        read_input(res, as_json)


def test_unknown_format(tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("hello")
    with pytest.raises(InputError, match="unknown input format"):
        read_input(p)


# --- CSV / TSV: strict schema, every anomaly names its line -----------------------------
def _csv(tmp_path, text, name="t.csv"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize("text, match", [
    ("id,candidate,ref1\na,a dog,a dog runs,EXTRA\n", r"t.csv:2: 4 cells, but the header has 3"),
    ("id,candidate,ref1,ref2\na,a dog, runs,a dog runs,x\n", r"t.csv:2: 5 cells.*unquoted comma"),
    ("id,candidate,ref1\na,a dog\n", r"t.csv:2: 2 cells, but the header has 3"),
    ("id,candidate,ref,ref,ref\na,x,r1,r2,r3\n", r"t.csv:1: column 'ref' appears twice"),
    ("id,candidate,ref1,referee_note\na,x,r1,looks fine\n", r"t.csv:1: unknown column\(s\) 'referee_note'"),
    ("id,candidate,ref1\na,x,r\n\nb,\"bad\"quote,r\n", r"t.csv:4: not valid CSV"),
    ("id,candidate,ref1\na,x,r\n,y,r\n", r"t.csv:3: empty id"),
    ("id,candidate,ref1\na,x,r\na,y,r\n", r"t.csv:3: duplicate id 'a' \(first on line 2\)"),
    ("id,candidate,ref1,ref2\na,x,,\n", r"t.csv:2: id 'a' has no reference"),
    ("id,caption,ref1\na,x,r\n", r"t.csv:1: unknown column\(s\) 'caption'"),
    ("id,candidate\na,x\n", r"t.csv:1: no reference column"),
    ("id,candidate,ref1\n", r"a header but no rows"),
    ("", r"empty file"),
    ("id\tcandidate\tref1\na\tx\tr\n", r"t.csv:1: unknown column.*tab-separated file\? Name it .tsv"),
])
def test_csv_anomalies_are_errors_naming_the_line(tmp_path, text, match):
    with pytest.raises(InputError, match=match):
        read_input(_csv(tmp_path, text))


def test_csv_line_numbers_count_physical_lines(tmp_path):
    # a quoted caption spanning two lines: the next record starts on line 4
    p = _csv(tmp_path, 'id,candidate,ref1\na,"two\nlines",r\nb,x\n')
    with pytest.raises(InputError, match=r"t.csv:4: 2 cells"):
        read_csv(p)


def test_csv_reference_columns_and_ragged_references(tmp_path):
    p = _csv(tmp_path, "Candidate,reference_1,Ref2,ref_3\nx,r1,,r3\ny,s1,s2,\n")
    ids, c, r = read_csv(p)
    assert ids == ["2", "3"]  # no id column: the line each row starts on
    assert c == ["x", "y"] and r == [["r1", "r3"], ["s1", "s2"]]


def test_tsv_is_tab_separated_without_quoting(tmp_path):
    p = _csv(tmp_path, 'id\tcandidate\tref1\tref2\na\ta "quoted" dog, sitting\ta dog\tone, two\n', name="t.tsv")
    ids, c, r = read_input(p)
    assert ids == ["a"] and c == ['a "quoted" dog, sitting'] and r == [["a dog", "one, two"]]
    with pytest.raises(InputError, match=r"t.tsv:2: 4 cells, but the header has 3"):
        read_input(_csv(tmp_path, "id\tcandidate\tref1\na\tx\tr\tEXTRA\n", name="t.tsv"))
    with pytest.raises(InputError, match=r"t.tsv:1: unknown column.*comma-separated file\? Name it .csv"):
        read_input(_csv(tmp_path, "id,candidate,ref1\na,x,r\n", name="t.tsv"))


def test_csv_field_over_the_csv_limit_is_named(tmp_path):
    p = _csv(tmp_path, "id,candidate,ref1\na,\"" + "x" * 200_000 + "\",r\n")
    with pytest.raises(InputError, match=r"t.csv:2: not valid CSV \(field larger than field limit"):
        read_csv(p)
