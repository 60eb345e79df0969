import json

import pytest

from capeval.errors import InputError
from capeval.io import read_coco, read_csv, read_input, read_jsonl


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


def test_unknown_format(tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("hello")
    with pytest.raises(InputError, match="unknown input format"):
        read_input(p)
