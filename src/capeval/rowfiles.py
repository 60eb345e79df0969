"""Per-row score files (JSONL, CSV, Parquet) built from the same code for streamed and
in-memory results, so both give the same bytes.

JSONL: one object per input row, in input order: ``{"id": ..., "<metric>": value, ...}``.
CSV: header ``id,<metric>,...`` then one row per input row (``repr`` of each float).
Parquet: columns ``id`` and one float64 column per metric, one row group per chunk.
Corpus scores and signatures go next to the file in ``<name>.signatures.json`` (``x.csv`` ->
``x.signatures.json``). The two are written as a pair: the signatures file holds the rows file's
size and SHA-256 (``"rows"``), both are complete on disk before either is renamed into
place, and :func:`read_signatures` refuses a pair whose rows do not match, so a crash between
the two renames is detected instead of leaving scores and signatures that disagree.

A format module below both users (``capeval.inputs`` for in-memory results, ``capeval.stream`` for
streamed ones); it imports nothing from either.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import re
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


def _jsonl_fast(ids: Sequence, per_caption: dict[str, np.ndarray], cols: list[list[float]]) -> bytes | None:
    """The JSONL rows as ``json.dumps`` of each row's object writes them, by one format string
    per row: str ids through json's own string encoder, int ids and finite floats by ``repr``
    (as json does). None (use json.dumps) for other ids, a non-finite score or a score named
    "id"."""
    if not ids or "id" in per_caption or not all(np.isfinite(v).all() for v in per_caption.values()):
        return None
    if all(type(k) is str for k in ids):
        from json.encoder import encode_basestring

        keys = list(map(encode_basestring, ids))
    elif all(type(k) is int for k in ids):
        keys = list(map(int.__repr__, ids))
    else:
        return None
    row = "{" + ", ".join(json.dumps(n, ensure_ascii=False).replace("%", "%%") + ": %s"
                          for n in ["id", *per_caption]) + "}"
    text = "\n".join(map(row.__mod__, zip(keys, *(map(float.__repr__, c) for c in cols))))
    return (text + "\n").encode("utf-8")


#: A spreadsheet reads a cell starting with one of these as a formula (``=cmd|' /C calc'!A0``).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)


def csv_cell(value: object) -> str:
    """An id as a CSV cell a spreadsheet shows as text: one starting like a formula gets a
    leading ``'`` (OWASP's advice against CSV injection), unless it is a plain number (``-5``).
    A cell that starts with ``'`` gets one more, so stripping one ``'`` always gives the id back."""
    text = str(value)
    if text.startswith("'") or (text.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(text)):
        return "'" + text
    return text


def fragment(fmt: str, ids: Sequence, per_caption: dict[str, np.ndarray]) -> bytes:
    """The rows of one chunk in ``fmt`` (without the CSV header); empty for Parquet."""
    names = list(per_caption)
    cols = [per_caption[m].tolist() for m in names]
    if fmt == "jsonl":
        fast = _jsonl_fast(ids, per_caption, cols)
        if fast is not None:
            return fast
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
            w.writerow([csv_cell(key), *(repr(float(col[i])) for col in cols)])
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

    def commit(self, corpus: dict[str, float] | None = None, signatures: dict[str, str] | None = None) -> None:
        """Move the rows into place; with ``corpus`` and ``signatures``, together with their
        signatures file (:func:`commit_pair`)."""
        if self._f is not None:
            self._f.flush()
            os.fsync(self._f.fileno())
            self._f.close()
        if self._pq is not None:
            self._pq.close()
            with open(self.tmp, "rb") as f:  # on disk before the rename, as the other formats
                os.fsync(f.fileno())
        if signatures is None:
            os.replace(self.tmp, self.path)
        else:
            commit_pair(self.tmp, self.path, corpus or {}, signatures)

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


def _rows_manifest(rows_file: Path) -> dict:
    # No file name: the signatures file's own name pairs it, and equal rows give equal bytes
    # whatever the output is called (streamed and in-memory results are compared that way).
    from .digests import sha256_file

    return {"bytes": rows_file.stat().st_size, "sha256": sha256_file(rows_file)}


def commit_pair(rows_tmp: str | Path, path: str | Path, corpus: dict[str, float], signatures: dict[str, str]) -> None:
    """Rename ``rows_tmp`` (complete and on disk) to ``path`` and write ``<name>.signatures.json``
    naming its hash: the signatures file is on disk under a temporary name before the rows are
    renamed, and renamed right after them."""
    from .errors import OutputError
    from .outputs import atomic_open, special_file

    rows_tmp, path = Path(rows_tmp), Path(path)
    what = special_file(path)
    if what is not None:  # renaming over it would replace the device node itself
        raise OutputError(f"output {path} is {what}; capeval writes only regular files")
    payload = {"corpus": corpus, "signatures": signatures, "rows": _rows_manifest(rows_tmp)}
    with atomic_open(signatures_path(path)) as f:
        f.write(json.dumps(payload, indent=2))
        f.flush()
        os.fsync(f.fileno())
        os.replace(rows_tmp, path)


class PairMismatch(ValueError):
    """A row file and its signatures file that were not written together."""


def read_signatures(path: str | Path) -> dict:
    """``{"corpus", "signatures", "rows"}`` of the row file ``path``, after checking that the
    rows are the ones its signatures were written with (size and SHA-256). Raises
    :class:`PairMismatch` naming both files when they disagree or one is missing."""
    p = Path(path)
    sig = signatures_path(p)
    if not p.is_file() or not sig.is_file():
        missing = p if not p.is_file() else sig
        raise PairMismatch(f"{missing} is missing: {p} and {sig} are written as a pair; re-run the scoring")
    payload = json.loads(sig.read_text(encoding="utf-8"))
    rows = payload.get("rows")
    if not isinstance(rows, dict):
        raise PairMismatch(f"{sig} names no rows file hash (written by an older capeval?); it cannot be "
                           f"checked against {p}: re-run the scoring")
    actual = _rows_manifest(p)
    if rows.get("bytes") != actual["bytes"] or rows.get("sha256") != actual["sha256"]:
        raise PairMismatch(f"{p} and {sig} disagree: the rows are not the ones these signatures were written "
                           "with (an interrupted or partial write, or an edited file); re-run the scoring")
    return payload


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
        w.commit(corpus, signatures)
    except BaseException:
        w.abort()
        raise
