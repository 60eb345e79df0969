"""Parquet ids follow the JSONL rule (issue 41, item 13): an integer id past 2**53 is refused by
name, in memory and streamed, as the JSON door refuses it in JSONL; 2**53 itself and string ids
of any length are read."""
from __future__ import annotations

import pytest

import capeval
from capeval.errors import InputError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _write(path, ids):
    pq.write_table(pa.table({"id": ids, "candidate": ["a dog runs"] * len(ids),
                             "references": [["a dog runs fast"]] * len(ids)}), path)


@pytest.mark.parametrize("big", [2**53 + 1, -(2**53) - 1, 2**63 - 1])
def test_an_integer_id_past_2_53_is_refused_in_memory_and_streamed(tmp_path, big):
    from capeval.cli.main import app
    from typer.testing import CliRunner

    src = tmp_path / "rows.parquet"
    _write(src, [1, big])
    with pytest.raises(InputError, match=r"row 2: id .*past 2\*\*53"):
        capeval.score_stream(src, ["bleu4"], chunk_size=1)
    res = CliRunner().invoke(app, ["score", "-i", str(src), "-m", "bleu4", "-q"])
    assert res.exit_code == 2 and "2**53" in res.output and "Traceback" not in res.output


def test_2_53_and_long_string_ids_are_read(tmp_path):
    src = tmp_path / "rows.parquet"
    _write(src, [1, 2**53])
    assert capeval.score_stream(src, ["bleu4"], chunk_size=1).n == 2
    _write(src, ["1", "9" * 40])
    assert capeval.score_stream(src, ["bleu4"], chunk_size=1).n == 2
