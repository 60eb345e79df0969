"""The doors themselves (capeval.guards): what each accepts and refuses. Every surface against every
hostile input is tests/test_hostile_inputs.py."""
from __future__ import annotations

import collections
import os
import pickle
import struct

import pytest

from capeval import guards
from capeval.errors import InputError


@pytest.mark.parametrize("text,value", [("1", 1.0), ("-2.5", -2.5), ("+3", 3.0), (".5", 0.5), ("5.", 5.0),
                                        ("1e3", 1000.0), (" 7 ", 7.0), (2 ** 53, 2.0 ** 53)])
def test_numbers_accepted(text, value):
    assert guards.parse_number(text, "f:2") == value


@pytest.mark.parametrize("text,match", [
    ("1_000", "not a number"),  # Python's digit grouping: float() reads it, JSON does not
    ("٣", "not a number"),  # Arabic-Indic three: float() reads it, JSON does not
    ("0x10", "not a number"), ("high", "not a number"), ("", "not a number"),
    ("nan", "must be finite"), ("-Infinity", "must be finite"), ("1" * 400, "400 digits"), ("1e400", "past a float"),
    (True, "not a number"), (None, "not a number"), ([1], "not a number"), (2 ** 53 + 1, "2\\*\\*53"),
])
def test_numbers_refused_like_json(text, match):
    with pytest.raises(InputError, match=match):
        guards.parse_number(text, "f:2")


def test_scores_csv_cells_are_read_strictly(tmp_path):
    from capeval.scorefile import read_scores

    for cell in ("1_000", "٣"):
        p = tmp_path / "s.csv"
        p.write_text(f"id,score\nu1,{cell}\n", encoding="utf-8")
        with pytest.raises(InputError, match=f"s.csv:2: score '{cell}' is not a number"):
            read_scores(p)


def test_json_refuses_a_key_given_twice_naming_it():
    assert guards.loads_json('{"a": {"b": 1}, "b": [{"a": 2}]}', "x") == {"a": {"b": 1}, "b": [{"a": 2}]}
    with pytest.raises(InputError, match=r'^f.json: invalid JSON \(the key "id" appears twice in one object\)$'):
        guards.loads_json('{"id": 1, "caption": "a", "id": 2}', "f.json")
    with pytest.raises(InputError, match=r'f.json:3: .*the key "\\u00e9" appears twice'):
        guards.loads_json('[{"x": [{"\u00e9": 1, "é": 2}]}]', "f.json:3")
    with pytest.raises(InputError, match=r'the key "k{80}"\.\.\. appears'):
        guards.loads_json('{"%s": 1, "%s": 2}' % ("k" * 1000, "k" * 1000), "x")


def test_json_limits():
    assert guards.loads_json('{"a": [1, 2, {"b": 9007199254740992}]}', "x") == {"a": [1, 2, {"b": 2 ** 53}]}
    with pytest.raises(InputError, match="x: unreadable JSON .nested deeper than 64"):
        guards.loads_json("[" * 65 + "]" * 65, "x")
    with pytest.raises(InputError, match="nested deeper than"):
        guards.loads_json("[" * 100_000 + "]" * 100_000, "x")
    with pytest.raises(InputError, match="an integer of 16 digits"):
        guards.loads_json("[9007199254740993]", "x")
    with pytest.raises(InputError, match="an integer of 4400 digits"):
        guards.loads_json("1" * 4400, "x")


def test_text_lines_names_bad_utf8_by_byte_and_line(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"\xef\xbb\xbfok\n" + b"x" * 70_000 + b"\n\xff\n")
    with pytest.raises(InputError, match=r"t.jsonl: not valid UTF-8 \(byte 70007, line 3"):
        list(guards.text_lines(p, "input file", 1 << 20))
    p.write_bytes(b"\xef\xbb\xbfa\r\nb\n")
    assert list(guards.text_lines(p, "input file", 1 << 20)) == ["a\r\n", "b\n"]


def test_overlong_line_is_named(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"a\n" + b"b" * 2000)
    with pytest.raises(InputError, match="t.jsonl:2: a line over"):
        list(guards.text_lines(p, "input file", 1 << 20, max_line=1000))


def test_files_that_are_not_regular_are_named(tmp_path):
    fifo = tmp_path / "df.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="is a FIFO"):
        guards.read_regular(fifo, "CIDEr df file", 100)  # refused at once, not blocked on
    with pytest.raises(InputError, match="is a character device"):
        guards.read_regular("/dev/zero", "input file", 100)
    with pytest.raises(InputError, match="is a directory"):
        guards.read_regular(tmp_path, "input file", 100)
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 101)
    with pytest.raises(InputError, match="has 101 bytes, over the limit"):
        guards.read_regular(big, "input file", 100)


def _u(text: str) -> bytes:
    b = text.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def test_pickle_prescan_passes_a_real_df_file_and_counts_memo_references():
    df = collections.defaultdict(float, {("a",): 3.0, ("a", "dog"): 1.0, ("a", "dog", "runs", "fast"): 1.0})
    for proto in range(6):
        guards.prescan_pickle(pickle.dumps({"document_frequency": df, "ref_len": 10}, protocol=proto), "x")
    word = _u("w" * 1000) + b"q\x00"  # one 1000-character word in the memo, referenced 600 times
    data = b"\x80\x02]" + word + b"a" + b"h\x00a" * 600 + b"."
    guards.prescan_pickle(data, "x", max_decoded=10 ** 6)
    with pytest.raises(InputError, match="every reference"):
        guards.prescan_pickle(data, "x", max_decoded=500_000)


def test_walk_files_enters_each_directory_once(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.png").write_bytes(b"x")
    (tmp_path / "a" / "loop").symlink_to("..")
    (tmp_path / "self").symlink_to(".")
    assert sorted(p.name for p in guards.walk_files(tmp_path)) == ["x.png"]


def test_contained_passes_ctrl_c_and_catches_exits():
    def exits():
        raise SystemExit(0)

    def interrupted():
        raise KeyboardInterrupt

    value, exc = guards.contained(exits)
    assert value is None and isinstance(exc, SystemExit)
    with pytest.raises(KeyboardInterrupt):
        guards.contained(interrupted)


@pytest.mark.parametrize("data", [b"(2t.", b"(2\x85.", b"\x80\x02h\x00.", b"\x80\x02X\xff\xff\xff\xff", b"", b"\x80"])
def test_pickle_prescan_names_malformed_streams(data):
    with pytest.raises(InputError, match="not a readable pickle|opcode"):
        guards.prescan_pickle(data, "x")


def _memo_tuples(n: int) -> bytes:
    """A df pickle of ``n`` distinct 3-tuples of memo references (9 bytes each), as the probe's
    45 MB file of 5,000,000 that took 1.41 GB once read."""
    def u(t: str) -> bytes:
        b = t.encode()
        return b"\x8c" + bytes([len(b)]) + b

    out = bytearray(b"\x80\x04}" + u("document_frequency") + b"}")
    for i in range(100):
        out += u(f"w{i}") + b"\x940"  # MEMOIZE, POP
    out += b"G" + struct.pack(">d", 1.0) + b"\x940("
    for k in range(n):
        a, b, c = k // 10_000, k // 100 % 100, k % 100
        out += b"h" + bytes([a]) + b"h" + bytes([b]) + b"h" + bytes([c]) + b"\x87h\x64"
    return bytes(out + b"us" + u("ref_len") + b"K\x0as.")


def test_pickle_prescan_bounds_what_memo_references_expand_to():
    """Issue 41, item 8: bytes alone did not bound memory (45 MB of memo'd 3-tuples: 1.41 GB).
    The pre-scan estimates the objects built, counting every memo reference; 200,000 tuples
    (1.8 MB) are estimated at over 30 MB and refused under a 30 MB limit, by name."""
    data = _memo_tuples(200_000)
    assert len(data) < 2_000_000
    guards.prescan_pickle(data, "x")
    with pytest.raises(InputError, match=r"x: the pickle would take about .* in memory once read"):
        guards.prescan_pickle(data, "x", max_expanded=30 << 20)


def test_read_regular_reserves_only_what_the_file_holds(tmp_path):
    """Issue 41, item 7: ``f.read(max_bytes + 1)`` reserved the whole 1 GiB limit for a
    149-byte file (MemoryError under ``prlimit --as=1.1e9``); under a 600 MB address-space
    limit a tiny file is still read with the 1 GiB limit."""
    import subprocess
    import sys
    import textwrap

    p = tmp_path / "tiny.json"
    p.write_bytes(b'{"a": 1}')
    code = textwrap.dedent(f"""
        import resource
        from capeval import guards
        resource.setrlimit(resource.RLIMIT_AS, (600 << 20, 600 << 20))
        for _ in range(3):
            assert guards.read_regular({str(p)!r}, "x", guards.MAX_JSON_BYTES) == b'{{"a": 1}}'
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]
