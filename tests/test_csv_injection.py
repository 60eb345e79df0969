"""Ids written to a CSV output cannot run as spreadsheet formulas (issue 41, item 13): an id
starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is written after a ``'``,
as OWASP advises; plain numbers (``-5``) are kept; one ``'`` stripped gives every id back."""
from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from capeval.rowfiles import csv_cell, fragment

IDS = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx", "'quoted", "-5", "+1.5e3", "plain", 7]


def test_formula_ids_are_escaped_and_numbers_kept():
    got = [csv_cell(i) for i in IDS]
    assert got[:7] == ["'" + str(i) for i in IDS[:7]]
    assert got[7:] == ["-5", "+1.5e3", "plain", "7"]


def test_the_csv_fragment_reads_back_to_the_ids():
    data = fragment("csv", IDS, {"bleu4": np.arange(len(IDS), dtype=float)}).decode("utf-8")
    cells = [row[0] for row in csv.reader(io.StringIO(data, newline=""))]
    assert all(not c.startswith(("=", "+", "@", "\t", "\r")) or c in ("+1.5e3",) for c in cells)
    back = [c[1:] if c.startswith("'") else c for c in cells]
    assert back == [str(i) for i in IDS]


@pytest.mark.parametrize("fmt", ["jsonl"])
def test_other_row_formats_keep_ids_as_they_are(fmt):
    assert b"=cmd" in fragment(fmt, ["=cmd"], {"bleu4": np.zeros(1)})
