"""The fork df converter applies --cider-df's limits (issue 33, item 3): what it converts is what
``--cider-df`` reads, and a key nested 2,000 deep is refused before unpickling, not a raw
``RecursionError``. (200,000-deep keys and memo bombs: tests/test_hostile_inputs.py.)"""
from __future__ import annotations

import pickle
import struct

import pytest
from typer.testing import CliRunner

from capeval.cli.main import app
from capeval.compat.fork_df import convert_fork_df, read_fork_df
from capeval.errors import InputError


def _write(tmp_path, obj):
    p = tmp_path / "df.p"
    p.write_bytes(pickle.dumps(obj, protocol=2))
    return p


@pytest.mark.parametrize("ref_len,match", [
    (2 ** 60, "integer of 19 digits.*2\\*\\*53"),
    (10 ** 400, "integer of 401 digits"),
    (1e300, "<= 2\\*\\*53"),
    (float("inf"), "<= 2\\*\\*53"),
    (2.5, "whole number"),
    (1, ">= 2"),
])
def test_ref_len_within_what_cider_df_reads(tmp_path, ref_len, match):
    p = _write(tmp_path, {"document_frequency": {("a",): 1.0}, "ref_len": ref_len})
    with pytest.raises(InputError, match=match):
        read_fork_df(p)
    res = CliRunner().invoke(app, ["compat", "convert-cider-df", str(p), str(tmp_path / "out.json")])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert not (tmp_path / "out.json").exists()


def test_largest_ref_len_converts_and_is_read_by_cider_df(tmp_path):
    from capeval.dffile import read_df_file

    p = _write(tmp_path, {"document_frequency": {("a",): 1.0}, "ref_len": 2 ** 53})
    out = tmp_path / "out.json"
    assert convert_fork_df(p, out)["n_units"] == 2 ** 53
    assert read_df_file(out)[1] == 2 ** 53


def test_a_deeply_nested_key_is_refused_before_unpickling(tmp_path):
    word = b"X" + struct.pack("<I", 1) + b"a"
    key = word + b"\x85" * 2000
    p = tmp_path / "deep.p"
    p.write_bytes(b"\x80\x02}X\x12\x00\x00\x00document_frequency}" + key + b"G" + struct.pack(">d", 1.0)
                  + b"ssX\x07\x00\x00\x00ref_lenK\x0as.")
    with pytest.raises(InputError, match="deeper than 64"):
        read_fork_df(p)
