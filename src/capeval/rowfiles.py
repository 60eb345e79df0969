"""Per-row score files (JSONL, CSV, Parquet) built from the same code for streamed and
in-memory results, so both give the same bytes.

JSONL: one object per input row, in input order: ``{"id": ..., "<metric>": value, ...}``.
CSV: header ``id,<metric>,...`` then one row per input row (``repr`` of each float).
Parquet: columns ``id`` and one float64 column per metric, one row group per chunk.
Corpus scores and signatures go next to the file in ``<name>.signatures.json``.

A format module below both users (``capeval.io`` for in-memory results, ``capeval.stream`` for
streamed ones); it imports nothing from either.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

#: Rows per chunk, streamed or written from memory (Parquet's row group, so both give the same
#: bytes): ~0.1-0.2 GB per chunk in flight; 1,000-10,000 rows cost the same CPU.
DEFAULT_CHUNK = 2_000

ROW_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet"}


def row_format(path: str | Path) -> str | None:
    return ROW_FORMATS.get(Path(path).suffix.lower())


def _clean(x: float):
    # As Result.to_dict: NaN -> null, infinities as strings (JSON has neither).
    return x if math.isfinite(x) else None if math.isnan(x) else ("inf" if x > 0 else "-inf")


def csv_header(names: Sequence[str]) -> bytes:
    buf = io.StringIO(newline="")
    csv.writer(buf).writerow(["id", *names])
    return buf.getvalue().encode("utf-8")


def fragment(fmt: str, ids: Sequence, per_caption: dict[str, np.ndarray]) -> bytes:
    """The rows of one chunk in ``fmt`` (without the CSV header); empty for Parquet."""
    names = list(per_caption)
    cols = [per_caption[m].tolist() for m in names]
    if fmt == "jsonl":
        dumps = json.dumps
        lines = []
        for i, key in enumerate(ids):
            obj = {"id": key}
            for m, col in zip(names, cols):
                obj[m] = _clean(col[i])
            lines.append(dumps(obj, ensure_ascii=False))
        return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""
    if fmt == "csv":
        buf = io.StringIO(newline="")
        w = csv.writer(buf)
        for i, key in enumerate(ids):
            w.writerow([key, *(repr(float(col[i])) for col in cols)])
        return buf.getvalue().encode("utf-8")
    if fmt == "parquet":
        return b""
    raise ValueError(f"unknown row format {fmt!r}")


def parquet_table(ids: Sequence, per_caption: dict[str, np.ndarray]):
    """Ids are written as strings (JSONL allows string and integer ids in one file, and a
    Parquet column has one type), scores as float64."""
    import pyarrow as pa

    cols = {"id": pa.array([str(k) for k in ids], type=pa.string())}
    for m, v in per_caption.items():
        cols[m] = pa.array(np.asarray(v, dtype=np.float64), type=pa.float64())
    return pa.table(cols)


class RowFileWriter:
    """Writes a row file chunk by chunk into a temporary name beside ``path`` and moves it
    into place on :meth:`commit` (a reader never sees a half-written file)."""

    def __init__(self, path: Path, fmt: str, names: Sequence[str]):
        self.path, self.fmt, self.names = path, fmt, list(names)
        self.tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        self._pq = None
        if fmt == "parquet":
            self._f = None
        else:
            self._f = self.tmp.open("wb")
            if fmt == "csv":
                self._f.write(csv_header(self.names))

    def write(self, fragment_bytes: bytes, ids: Sequence, per_caption: dict[str, np.ndarray]) -> None:
        if self.fmt != "parquet":
            self._f.write(fragment_bytes)
            return
        import pyarrow.parquet as pq

        table = parquet_table(ids, {m: per_caption[m] for m in self.names})
        if self._pq is None:
            self._pq = pq.ParquetWriter(self.tmp, table.schema)
        self._pq.write_table(table)

    def commit(self) -> None:
        if self._f is not None:
            self._f.flush()
            os.fsync(self._f.fileno())
            self._f.close()
        if self._pq is not None:
            self._pq.close()
            with open(self.tmp, "rb") as f:  # on disk before the rename, as the other formats
                os.fsync(f.fileno())
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        try:
            if self._f is not None:
                self._f.close()
            if self._pq is not None:
                self._pq.close()
        finally:
            self.tmp.unlink(missing_ok=True)


def signatures_path(path: str | Path) -> Path:
    return Path(path).with_suffix(".signatures.json")


def write_signatures(path: str | Path, corpus: dict[str, float], signatures: dict[str, str]) -> None:
    """``<name>.signatures.json`` beside a row file, as the CSV writer has always done."""
    from .outputs import atomic_write

    atomic_write(signatures_path(path), json.dumps({"corpus": corpus, "signatures": signatures}, indent=2))


def write_rows(path: str | Path, ids: Sequence, per_caption: dict[str, np.ndarray],
               corpus: dict[str, float], signatures: dict[str, str], chunk_rows: int | None = None) -> None:
    """An in-memory result as a row file: the same bytes as a streamed run (JSONL and CSV with
    any chunk size; Parquet row groups follow ``chunk_rows``, by default the streaming chunk)."""
    chunk_rows = chunk_rows or DEFAULT_CHUNK
    p = Path(path)
    fmt = row_format(p)
    if fmt is None:
        raise ValueError(f"{p}: not a row file (.jsonl, .csv, .parquet)")
    w = RowFileWriter(p, fmt, list(per_caption))
    try:
        for s in range(0, len(ids), chunk_rows):
            part = {m: np.asarray(v, dtype=np.float64)[s:s + chunk_rows] for m, v in per_caption.items()}
            cid = list(ids[s:s + chunk_rows])
            w.write(fragment(fmt, cid, part), cid, part)
        w.commit()
    except BaseException:
        w.abort()
        raise
    write_signatures(p, corpus, signatures)
