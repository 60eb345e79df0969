"""Rows in chunks from JSONL, CSV/TSV, Parquet or a Python iterable, without reading it all.

The file readers apply the same per-row rules and error messages as :mod:`capeval.inputs` (they
share its line parsers); duplicate ids are checked by the caller across the whole input.
A chunk carries a digest of its content, which the run store uses to tell whether a saved
chunk result belongs to these rows.
"""
from __future__ import annotations

import hashlib
import pickle
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..guards import open_lines
from ..errors import InputError

STREAM_SUFFIXES = (".jsonl", ".ndjson", ".csv", ".tsv", ".parquet")


@dataclass
class Chunk:
    index: int                 # chunk number, from 0
    start: int                 # input row index of the first row
    ids: list | None           # None when the rows carry no ids (API iterables)
    cands: list
    refs: list
    lines: list[int] | None    # source line of each row (JSONL/CSV), for error messages
    digest: str = ""
    #: The validated texts tokenized (``tokenize_corpus``), when the df pass kept them.
    tokens: tuple[list[str], list[list[str]]] | None = None
    #: Each row's image path (:mod:`capeval.stream.images`), or None when the run reads no images.
    images: list[str] | None = None

    def __len__(self) -> int:
        return len(self.cands)


def _digest(ids, cands, refs, images=None) -> str:
    # Some 3x faster than a JSON text of the rows. pickle's bytes also follow which objects
    # are shared, which reading the same rows again reproduces; a difference would only make
    # a resumed run score a chunk again, never reuse another chunk's result.
    rows = [ids, cands, refs]
    if images is not None:
        # An image's numbers follow its bytes (CLIP's embedding cache is keyed by their
        # SHA-256): its size and modification time stand for them, so a resumed run scores a
        # chunk again when one of its images was replaced, without reading every image twice.
        rows += [images, [_file_state(p) for p in images]]
    blob = pickle.dumps(rows, protocol=5)
    return hashlib.sha256(blob).hexdigest()


def _file_state(path: str) -> tuple[int, int] | None:
    import os

    try:
        st = os.stat(path)
    except OSError:  # gone: the score pass names it (capeval.score's image check)
        return None
    return st.st_size, st.st_mtime_ns


def _utf8_error(path, lineno: int, raw: bytes, e: UnicodeDecodeError) -> InputError:
    return InputError(f"{path}: not valid UTF-8 (line {lineno}: {raw[e.start:e.start + 8]!r}). "
                      "Re-encode the file as UTF-8.")


def _jsonl_rows(path: Path, with_image: bool = False) -> Iterator[tuple]:
    from ..inputs import parse_jsonl_line

    with open_lines(path, "input file") as f:  # a regular file, lines bounded (capeval.guards)
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise _utf8_error(path, lineno, raw, e) from None
            if lineno == 1 and line.startswith("\ufeff"):
                line = line[1:]
            rec = parse_jsonl_line(path, lineno, line, with_image=with_image)
            if rec is not None:
                yield (lineno, *rec)


#: After a ``\r`` that is not part of ``\r\n``: a line end too, as universal newlines read it.
_LONE_CR = re.compile(r"(?<=\r)(?!\n)")


class _Utf8Lines:
    """Text lines of a binary file for the csv module; a decoding error names its line.

    Lines end at ``\n``, ``\r\n`` and a lone ``\r``, as :func:`capeval.inputs.read_csv` reads
    text (universal newlines), so both readers split rows and number lines alike."""

    def __init__(self, path: Path, f):
        self.path, self.f, self.lineno = path, f, 0
        self.pending: list[str] = []

    def __iter__(self):
        return self

    def __next__(self) -> str:
        if self.pending:
            return self.pending.pop()
        raw = self.f.readline()
        if not raw:
            raise StopIteration
        self.lineno += 1
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _utf8_error(self.path, self.lineno, raw, e) from None
        text = text[1:] if self.lineno == 1 and text.startswith("\ufeff") else text
        if "\r" in text:
            parts = [t for t in _LONE_CR.split(text) if t]
            self.pending = parts[:0:-1]
            return parts[0] if parts else text
        return text


def _csv_rows(path: Path, with_image: bool = False) -> Iterator[tuple]:
    from ..inputs import iter_csv

    with open_lines(path, "input file") as f:  # a regular file, lines bounded (capeval.guards)
        yield from iter_csv(path, _Utf8Lines(path, f), with_image=with_image)


def _parquet_rows(path: Path, batch: int) -> Iterator[tuple[int, object, object, object]]:
    """Columns ``candidate`` and ``references`` (a list of strings) or ``ref1``, ``ref2``, ...
    (strings; empty or null cells skipped), optionally ``id``. Row numbers count from 1."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    import pyarrow as pa

    f = open_lines(path, "input file").f  # through the file door: a regular file
    try:
        yield from _parquet_file_rows(path, pq, pa, f, batch)
    finally:
        f.close()


def _parquet_file_rows(path, pq, pa, f, batch):
    from ..guards import MAX_EXACT_INT
    from ..inputs import REF_COLUMN

    def damaged(e: Exception) -> InputError:
        return InputError(f"{path}: not a readable Parquet file ({type(e).__name__}: {e})")

    try:
        pf = pq.ParquetFile(f)
    except (pa.ArrowException, OSError) as e:
        raise damaged(e) from None
    names = pf.schema_arrow.names
    lower = [n.lower() for n in names]
    if "candidate" not in lower:
        raise InputError(f"{path}: no 'candidate' column (columns: {', '.join(names)})")
    ref_cols = [n for n, lo in zip(names, lower) if REF_COLUMN.fullmatch(lo)]
    list_col = next((n for n, lo in zip(names, lower) if lo == "references"), None)
    if list_col is None and not ref_cols:
        raise InputError(f"{path}: no 'references' list column and no ref1, ref2, ... columns")
    unknown = [n for n, lo in zip(names, lower)
               if lo not in ("id", "candidate", "references") and not REF_COLUMN.fullmatch(lo)]
    if unknown:
        raise InputError(f"{path}: unknown column(s) {', '.join(map(repr, unknown))}; the columns are id "
                         "(optional), candidate, and references (a list) or ref1, ref2, ...")
    id_col = next((n for n, lo in zip(names, lower) if lo == "id"), None)
    cand_col = names[lower.index("candidate")]
    cols = [c for c in (id_col, cand_col, list_col, *ref_cols) if c is not None]
    _check_parquet_sizes(path, pf, cols)
    row = 0
    batches = pf.iter_batches(batch_size=batch, columns=cols)
    while True:
        try:
            rb = next(batches)
        except StopIteration:
            return
        except (pa.ArrowException, OSError) as e:  # a damaged row group
            raise damaged(e) from None
        _check_parquet_cells(path, pa, rb, row)
        data = rb.to_pydict()
        for k in range(rb.num_rows):
            row += 1
            key = data[id_col][k] if id_col else row
            if id_col and (isinstance(key, bool) or not isinstance(key, (str, int))):
                raise InputError(f"{path}: row {row}: id must be a string or integer, got {key!r}")
            if id_col and isinstance(key, int) and abs(key) > MAX_EXACT_INT:  # as JSONL ids are limited
                raise InputError(f"{path}: row {row}: id {key} is an integer past 2**53; integers are limited to "
                                 "2**53 in magnitude (write large ids as strings)")
            if list_col is not None:
                refs = data[list_col][k]
                if not isinstance(refs, list):
                    raise InputError(f"{path}: row {row}: 'references' must be a list of strings, got {refs!r}")
            else:
                refs = [data[c][k] for c in ref_cols if data[c][k]]
                if not refs:
                    raise InputError(f"{path}: row {row}: id {key!r} has no reference (every reference cell is empty)")
            yield row, key, data[cand_col][k], refs


def _check_parquet_sizes(path, pf, cols) -> None:
    """Refuse, from the file's metadata and before anything is decoded, a column chunk that
    decompresses past the in-memory table limit (a 12 KB zstd file held a 121 MB caption)."""
    from ..guards import MAX_TABLE_BYTES

    md = pf.metadata
    wanted = set(cols)
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for i in range(rg.num_columns):
            c = rg.column(i)
            name = c.path_in_schema.split(".")[0]
            if name in wanted and c.total_uncompressed_size > MAX_TABLE_BYTES:
                raise InputError(f"{path}: column {name!r} of row group {g} decompresses to "
                                 f"{c.total_uncompressed_size:,} bytes, over the limit of {MAX_TABLE_BYTES >> 20:,} MiB")


def _check_parquet_cells(path, pa, rb, before: int) -> None:
    """Refuse a caption cell over the line limit of JSONL and CSV (64 MiB), naming its row,
    before the batch becomes Python strings."""
    import numpy as np
    import pyarrow.compute as pc

    from ..guards import MAX_LINE_BYTES

    for j, col in enumerate(rb.columns):
        if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
            lengths = pc.binary_length(pc.list_flatten(col)) if pa.types.is_string(col.type.value_type) or \
                pa.types.is_large_string(col.type.value_type) else None
            per_row = None if lengths is None else pc.list_value_length(col)
        elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type) or pa.types.is_binary(col.type):
            lengths, per_row = pc.binary_length(col), None
        else:
            continue
        if lengths is None or len(lengths) == 0:
            continue
        biggest = pc.max(lengths).as_py()
        if biggest is not None and biggest > MAX_LINE_BYTES:
            k = pc.index(lengths, biggest).as_py()
            if per_row is not None:  # the flattened index back to its row
                k = int(np.searchsorted(np.cumsum(per_row.fill_null(0).to_numpy(zero_copy_only=False)), k, "right"))
            raise InputError(f"{path}: row {before + k + 1}: a {rb.schema.names[j]!r} cell of {biggest:,} bytes, "
                             f"over {MAX_LINE_BYTES >> 20:,} MiB; captions are limited to that, as lines of JSONL and CSV "
                             "inputs are")


def _iterable_rows(rows: Iterable, with_image: bool = False) -> Iterator[tuple]:
    """API rows: ``(candidate, references)``, ``(id, candidate, references)`` or a mapping
    with ``candidate``, ``references`` and optionally ``id`` and ``image``."""
    for i, r in enumerate(rows):
        if isinstance(r, dict):
            if "candidate" not in r or "references" not in r:
                raise InputError(f"row {i}: a mapping needs 'candidate' and 'references' keys, got {sorted(r)!r}")
            row: tuple = (None, r.get("id"), r["candidate"], r["references"])
            if with_image:
                image = r.get("image")
                if image is not None and (not isinstance(image, (str, Path)) or not str(image).strip()):
                    raise InputError(f"row {i}: 'image' must be a file name or path, got {image!r}")
                row += (None if image is None else str(image),)
            yield row
        elif isinstance(r, (tuple, list)) and len(r) in (2, 3):
            row = (None, None, *r) if len(r) == 2 else (None, *r)
            yield (*row, None) if with_image else row
        else:
            raise InputError(f"row {i}: expected (candidate, references), (id, candidate, references) "
                             f"or a mapping, got {type(r).__name__}")


def open_rows(source, parquet_batch: int = 8192, with_image: bool = False) -> Iterator[tuple]:
    """``(line, id, candidate, references)`` of each row of a file path or an iterable, ``+
    (image,)`` with ``with_image``: the JSONL/CSV ``image`` field or a mapping's ``image``
    (None where absent; Parquet has no image column)."""
    if isinstance(source, (str, Path)):
        p = Path(source)
        if not p.exists():
            raise InputError(f"input file not found: {p}")
        suffix = p.suffix.lower()
        if suffix in (".jsonl", ".ndjson"):
            return _jsonl_rows(p, with_image)
        if suffix in (".csv", ".tsv"):
            return _csv_rows(p, with_image)
        if suffix == ".parquet":
            rows = _parquet_rows(p, parquet_batch)
            return ((*r, None) for r in rows) if with_image else rows
        raise InputError(f"{p}: cannot stream {suffix!r} input (use {', '.join(STREAM_SUFFIXES)})")
    return _iterable_rows(source, with_image)


def chunks(rows: Iterator[tuple], size: int, images: Callable | None = None) -> Iterator[Chunk]:
    """Consecutive chunks of ``size`` rows (the last may be shorter). With ``images``, rows
    carry an image name (``open_rows(..., with_image=True)``) that ``images(ids, names, start)``
    turns into the chunk's image paths (:meth:`capeval.stream.images.ImageRows.resolve`)."""
    if size < 1:
        raise InputError(f"chunk size must be >= 1, got {size}")
    index = start = 0
    buf: list[tuple] = []

    def make() -> Chunk:
        lines = [r[0] for r in buf]
        ids = [r[1] for r in buf]
        if all(x is None for x in ids):
            ids = None
        elif any(x is None for x in ids):
            raise InputError(f"rows {start}-{start + len(buf) - 1}: some rows have an id and some do not")
        cands = [r[2] for r in buf]
        refs = [r[3] for r in buf]
        paths = None if images is None else images(ids, [r[4] for r in buf], start)
        return Chunk(index, start, ids, cands, refs, None if lines[0] is None else lines,
                     _digest(ids, cands, refs, paths), images=paths)

    for r in rows:
        buf.append(r)
        if len(buf) == size:
            yield make()
            index += 1
            start += len(buf)
            buf = []
    if buf:
        yield make()
