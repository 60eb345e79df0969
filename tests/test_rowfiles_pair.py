"""A row file and its ``<name>.signatures.json`` are written and read as a pair."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import capeval
from capeval.inputs import write_result
from capeval.rowfiles import PairMismatch, read_signatures, signatures_path, write_rows

IDS = ["a", "b"]


def _write(path, value: float) -> None:
    write_rows(path, IDS, {"bleu1": np.array([value, 0.5])}, {"bleu1": value}, {"bleu1": "sig"})


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_pair_reads_back_and_names_its_rows(tmp_path, suffix):
    out = tmp_path / f"scores{suffix}"
    if suffix == ".csv":
        r = capeval.score(["a dog", "two cats"], [["a dog"], ["two cats"]], ["bleu1"])
        write_result(r, out, IDS)
    else:
        _write(out, 0.25)
    payload = read_signatures(out)
    assert payload["rows"]["bytes"] == out.stat().st_size
    assert set(payload) == {"corpus", "signatures", "rows"}


def test_edited_rows_are_detected(tmp_path):
    out = tmp_path / "scores.jsonl"
    _write(out, 0.25)
    out.write_bytes(out.read_bytes().replace(b"0.25", b"0.75"))
    with pytest.raises(PairMismatch, match="disagree"):
        read_signatures(out)


def test_crash_between_the_two_renames_is_detected(tmp_path, monkeypatch):
    out = tmp_path / "scores.jsonl"
    _write(out, 0.25)
    real = os.replace

    def crash_on_signatures(src, dst):
        if str(dst).endswith(".signatures.json"):
            raise OSError("simulated crash")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", crash_on_signatures)
    with pytest.raises(OSError):
        _write(out, 0.75)  # the rows move into place, their signatures do not
    monkeypatch.setattr(os, "replace", real)
    assert b"0.75" in out.read_bytes()
    assert json.loads(signatures_path(out).read_text())["corpus"] == {"bleu1": 0.25}
    with pytest.raises(PairMismatch, match="disagree"):
        read_signatures(out)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_missing_half_and_old_files(tmp_path):
    out = tmp_path / "scores.jsonl"
    _write(out, 0.25)
    signatures_path(out).write_text(json.dumps({"corpus": {}, "signatures": {}}))
    with pytest.raises(PairMismatch, match="names no rows file hash"):
        read_signatures(out)
    signatures_path(out).unlink()
    with pytest.raises(PairMismatch, match="missing"):
        read_signatures(out)
