"""Parquet cells are limited as JSONL lines are (issue 41, item 8: a 12 KB zstd file holding one
121 MB caption took 2.1 GB, then a MemoryError): refused by name, before the batch becomes Python
strings; a column chunk that decompresses past the table limit is refused from the metadata."""
from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from capeval import guards  # noqa: E402
from capeval.errors import InputError  # noqa: E402
from capeval.stream.readers import open_rows  # noqa: E402


def _write(path, cand2: str, ref2: list[str]):
    pq.write_table(pa.table({"id": ["x", "y", "z"], "candidate": ["a dog", cand2, "a cat"],
                             "references": [["a dog"], ref2, ["a cat"]]}), path, compression="zstd")
    return path


@pytest.mark.parametrize("column", ["candidate", "references"])
def test_a_cell_over_the_line_limit_is_refused_naming_its_row(tmp_path, monkeypatch, column):
    monkeypatch.setattr(guards, "MAX_LINE_BYTES", 1000)
    big = "a " * 1000
    p = _write(tmp_path / "t.parquet", big if column == "candidate" else "a bird",
               ["a bird", big] if column == "references" else ["a bird"])
    with pytest.raises(InputError, match=f"t.parquet: row 2: a '{column}' cell of 2,000 bytes, over"):
        list(open_rows(p))
    monkeypatch.setattr(guards, "MAX_LINE_BYTES", 2000)
    assert [r[1] for r in open_rows(p)] == ["x", "y", "z"]


def test_a_column_that_decompresses_past_the_table_limit_is_refused_before_reading(tmp_path, monkeypatch):
    p = _write(tmp_path / "t.parquet", "a " * 5000, ["a bird"])
    monkeypatch.setattr(guards, "MAX_TABLE_BYTES", 4000)
    with pytest.raises(InputError, match="column 'candidate' of row group 0 decompresses to"):
        list(open_rows(p))
