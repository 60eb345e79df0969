"""Reading caption files (COCO results + annotations, JSONL, CSV/TSV) and writing score files.

Readers return ``(ids, candidates, references)`` aligned lists; problems raise :class:`InputError` naming the item.
"""
from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path

from .guards import loads_json
from .errors import InputError
from .result import Result


def read_text(path: str | Path, what: str = "input file", max_bytes: int | None = None) -> str:
    """The UTF-8 text of a regular file (a BOM dropped), through the file door
    (:func:`capeval.guards.read_regular`)."""
    from .guards import MAX_TABLE_BYTES, decode_utf8, read_regular

    return decode_utf8(path, read_regular(path, what, MAX_TABLE_BYTES if max_bytes is None else max_bytes))


def _load_json(path) -> object:
    from .guards import MAX_JSON_BYTES, loads_json

    return loads_json(read_text(path, "JSON file", MAX_JSON_BYTES), str(path))


def _load_json_saying(path, expected: str) -> object:
    """:func:`_load_json`, where a file of one JSON value per line (JSONL: "Extra data" to a
    JSON parser) is named as such, with what was ``expected`` instead."""
    try:
        return _load_json(path)
    except InputError as e:
        if "Extra data" not in str(e):
            raise
        raise InputError(f"{path}: holds several JSON values (one per line, as JSONL), where {expected} is "
                         "expected. JSONL rows ({\"id\", \"candidate\", \"references\"}) are read from a .jsonl "
                         "file without --annotations.") from None


def parse_jsonl_line(path, lineno: int, line: str, with_image: bool = False):
    """One JSONL line as ``(id, candidate, references)`` (``+ (image,)`` with ``with_image``:
    the optional ``image`` field, a file name or path, None when absent); ``None`` for a blank
    line. The id defaults to the line number. Shared by :func:`read_jsonl` and the streaming
    reader."""
    if not line.strip():
        return None
    try:
        obj = loads_json(line, f"{path}:{lineno}")
    except InputError as e:
        raise InputError(f"{e}. {_ONE_OBJECT_PER_LINE}") from None
    if not isinstance(obj, dict):
        got = "a JSON array (a list of rows?)" if isinstance(obj, list) else f"{type(obj).__name__} {obj!r:.40}"
        raise InputError(f"{path}:{lineno}: expected a JSON object, got {got}. {_ONE_OBJECT_PER_LINE}")
    for key in ("candidate", "references"):
        if key not in obj:
            raise InputError(f"{path}:{lineno}: missing key {key!r}")
    key = obj.get("id", lineno)
    if isinstance(key, bool) or not isinstance(key, (str, int)):  # JSON true/false are not integer ids
        raise InputError(f"{path}:{lineno}: id must be a string or integer, got {key!r}")
    if not isinstance(obj["references"], list):
        raise InputError(f"{path}:{lineno}: 'references' must be a list of strings")
    image = obj.get("image")
    if image is not None and (not isinstance(image, str) or not image.strip()):
        raise InputError(f"{path}:{lineno}: 'image' must be a file name or path, got {image!r}")
    if with_image:
        return key, obj["candidate"], obj["references"], image
    return key, obj["candidate"], obj["references"]


#: What a JSONL line must be, said whenever one is not.
_ONE_OBJECT_PER_LINE = ('A .jsonl input holds one JSON object per line, {"id": ..., "candidate": "...", '
                        '"references": ["...", ...]}, not one JSON document (a list, or an object over '
                        'several lines).')


def read_jsonl(path: str | Path):
    """Lines of ``{"id": ..., "candidate": str, "references": [str, ...]}`` (an ``image``
    field is read by :func:`read_input_images`)."""
    ids, cands, refs, _ = _read_jsonl(path)
    return ids, cands, refs


def _read_jsonl(path):
    # split on "\n" only: str.splitlines would also split inside captions on U+2028 etc.,
    # which validation must see (and read as spaces, or refuse in strict mode).
    from .guards import MAX_TABLE_BYTES, text_lines

    records = ((lineno, *rec) for lineno, line in enumerate(text_lines(path, "input file", MAX_TABLE_BYTES), 1)
               if (rec := parse_jsonl_line(path, lineno, line, with_image=True)) is not None)
    ids, cands, refs, images = _collect_unique(path, records)
    if not ids:
        raise InputError(f"{path}: no records")
    return ids, cands, refs, images


def _check_image_id(path, item: str, img) -> None:
    # A list or object id is unhashable (a bare TypeError); true/false would equal 1/0; NaN never
    # equals itself. Integral floats (1.0 from a float column) are kept: they match the int 1.
    if (isinstance(img, bool) or not isinstance(img, (int, str, float))
            or (isinstance(img, float) and not math.isfinite(img))):
        raise InputError(f"{path}: {item}: image_id must be an integer or a string, got {img!r}")


def read_coco(results: str | Path, annotations: str | Path):
    """COCO results list ``[{"image_id", "caption"}]`` + COCO captions annotation file.

    As in pycocoevalcap, the scored images are those in the results file; annotation images
    without a result are ignored. A result whose image has no annotation, or two results
    for one image, is an error.
    """
    kind = {".jsonl": "JSONL", ".ndjson": "JSONL", ".csv": "CSV", ".tsv": "TSV", ".parquet": "Parquet"}.get(
        Path(results).suffix.lower())
    if kind is not None:
        raise InputError(f"{results}: {kind} rows carry their own references; --annotations pairs a COCO results "
                         "file (.json: [{\"image_id\", \"caption\"}, ...]) with its captions file. Drop --annotations.")
    res = _load_json_saying(results, "COCO results (a .json list of {\"image_id\", \"caption\"} objects)")
    ann = _load_json_saying(annotations, "a COCO captions file (one JSON object with an 'annotations' list)")
    if isinstance(res, dict) and "annotations" in res:
        res = res["annotations"]
    if not isinstance(res, list):
        raise InputError(f"{results}: expected a list of {{'image_id', 'caption'}} objects")
    if not isinstance(ann, dict) or "annotations" not in ann:
        raise InputError(f"{annotations}: expected a COCO captions file with an 'annotations' list")
    gts: dict = {}
    if not isinstance(ann["annotations"], list):
        raise InputError(f"{annotations}: 'annotations' must be a list of {{'image_id', 'caption'}} objects")
    for j, a in enumerate(ann["annotations"]):
        try:
            img, cap = a["image_id"], a["caption"]
        except (KeyError, TypeError):
            raise InputError(f"{annotations}: annotation {j} lacks 'image_id' or 'caption'") from None
        _check_image_id(annotations, f"annotation {j}", img)
        gts.setdefault(img, []).append(cap)
    ids, cands, refs = [], [], []
    seen: dict = {}
    for j, r in enumerate(res):
        try:
            img, cap = r["image_id"], r["caption"]
        except (KeyError, TypeError):
            raise InputError(f"{results}: result {j} lacks 'image_id' or 'caption'") from None
        _check_image_id(results, f"result {j}", img)
        if img in seen:
            raise InputError(f"{results}: image_id {img!r} has two results (items {seen[img]} and {j})")
        seen[img] = j
        if img not in gts:
            raise InputError(f"{results}: image_id {img!r} (item {j}) has no reference captions in {annotations}")
        ids.append(img)
        cands.append(cap)
        refs.append(gts[img])
    if not ids:
        raise InputError(f"{results}: no results")
    return ids, cands, refs


# Reference columns: ``ref``/``reference`` followed by a number (``ref1``, ``ref_2``,
# ``reference3``), or a lone ``ref``/``reference``. Anything else that merely starts with
# "ref" (``referee_note``) is not a reference: unknown columns are refused, not guessed.
REF_COLUMN = re.compile(r"(?:ref|reference)(?:_?[0-9]+)?", re.IGNORECASE)


def _table_error(path, line: int, msg: str) -> InputError:
    return InputError(f"{path}:{line}: {msg}")


def _collect_unique(path, records):
    """ids, candidates, references and images of ``(line, id, candidate, references, image)``
    records, read as they come so a repeated id stops the read at its line."""
    ids, cands, refs, images = [], [], [], []
    seen: dict = {}
    for line, key, cand, rs, image in records:
        if key in seen:
            raise _table_error(path, line, f"duplicate id {key!r} (first on line {seen[key]})")
        seen[key] = line
        ids.append(key)
        cands.append(cand)
        refs.append(rs)
        images.append(image)
    return ids, cands, refs, images


def read_csv(path: str | Path, delimiter: str | None = None):
    """A table with a header row: ``candidate``, one or more reference columns (``ref1``,
    ``ref2``, ... or ``reference_1``, ...; a lone ``ref`` too), and optionally ``id``.

    Comma-separated with standard CSV quoting for ``.csv``; tab-separated without quoting for
    ``.tsv`` (a ``"`` is an ordinary character there, and a cell cannot hold a tab or line
    break). ``delimiter`` overrides the choice by suffix.

    Strict: an unknown or repeated column, a row with more or fewer cells than the header
    (an unquoted comma, a dropped cell), malformed quoting, an empty ``id`` or a row without
    any reference is an error naming the line. Empty reference cells are allowed (rows may
    have different numbers of references) and skipped. Without an ``id`` column the id of a
    row is the line it starts on.
    """
    ids, cands, refs, _ = _read_csv(path, delimiter)
    return ids, cands, refs


def _read_csv(path, delimiter: str | None = None):
    from .guards import MAX_TABLE_BYTES, text_lines

    p = Path(path)
    ids, cands, refs, images = _collect_unique(
        p, iter_csv(p, text_lines(p, "input file", MAX_TABLE_BYTES, newline=""), delimiter, with_image=True))
    if not ids:
        raise InputError(f"{p}: a header but no rows")
    return ids, cands, refs, images


def iter_csv(p: Path, stream, delimiter: str | None = None, with_image: bool = False):
    """``(line, id, candidate, references)`` of each row of the CSV/TSV text ``stream`` (rules in
    :func:`read_csv`, duplicate ids excepted: callers check those), ``+ (image,)`` with
    ``with_image`` (the optional ``image`` column; None when absent or empty). Lazy, so the
    streaming reader shares it."""
    tsv = (delimiter == "\t") if delimiter is not None else p.suffix.lower() == ".tsv"
    opts: dict = {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if tsv else {"delimiter": delimiter or ",", "strict": True}
    kind = "TSV" if tsv else "CSV"
    reader = csv.reader(stream, **opts)

    def records():
        while True:
            start = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as e:  # bad quoting, NUL byte, a field over the csv module's limit
                raise _table_error(p, start, f"not valid {kind} ({e})") from None
            if row:  # a completely empty line is not a record
                yield start, row

    rows = records()
    try:
        _, header = next(rows)
    except StopIteration:
        raise InputError(f"{p}: empty file; expected a header row (id, candidate, ref1, ref2, ...)") from None
    names = [h.strip().lower() for h in header]
    seen_cols: dict[str, int] = {}
    for k, name in enumerate(names):
        if name in seen_cols:
            raise _table_error(p, 1, f"column {header[k]!r} appears twice (columns {seen_cols[name] + 1} and {k + 1})")
        seen_cols[name] = k
    unknown = [h for h, n in zip(header, names)
               if n not in ("id", "candidate", "image") and not REF_COLUMN.fullmatch(n)]
    if unknown:
        raise _table_error(p, 1, f"unknown column(s) {', '.join(map(repr, unknown))}; the columns are id (optional), "
                                 "candidate, ref1, ref2, ... (or reference_1, ...) and image (optional)"
                                 + (f". Is this a {'comma' if tsv else 'tab'}-separated file? Name it "
                                    f"{'.csv' if tsv else '.tsv'}" if ("," if tsv else "\t") in "".join(header) else ""))
    if "candidate" not in seen_cols:
        raise _table_error(p, 1, "no 'candidate' column")
    ref_cols = [k for k, n in enumerate(names) if REF_COLUMN.fullmatch(n)]
    if not ref_cols:
        raise _table_error(p, 1, "no reference column (ref1, ref2, ... or reference_1, ...)")
    id_col = seen_cols.get("id")
    image_col = seen_cols.get("image")
    cand_col = seen_cols["candidate"]
    for line, row in rows:
        if len(row) != len(header):
            hint = " (an unquoted comma in a caption?)" if len(row) > len(header) and not tsv else ""
            raise _table_error(p, line, f"{len(row)} cells, but the header has {len(header)}{hint}")
        if [c.strip().lower() for c in row] == names:
            raise _table_error(p, line, "repeats the header row (files joined with cat?); remove it, or it "
                                        "would be scored as a caption")
        if id_col is not None:
            key = row[id_col]
            if not key.strip():
                raise _table_error(p, line, "empty id")
        else:
            key = str(line)
        row_refs = [row[k] for k in ref_cols if row[k]]
        if not row_refs:
            raise _table_error(p, line, f"id {key!r} has no reference (every reference cell is empty)")
        if with_image:
            yield line, key, row[cand_col], row_refs, (row[image_col].strip() or None) if image_col is not None else None
        else:
            yield line, key, row[cand_col], row_refs


def read_input(path: str | Path, annotations: str | Path | None = None):
    p = Path(path)
    if not p.exists():
        raise InputError(f"input file not found: {p}")
    if annotations is not None:
        return read_coco(p, annotations)
    suffix = p.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return read_jsonl(p)
    if suffix in (".csv", ".tsv"):
        return read_csv(p)
    if suffix == ".json":
        raise InputError(_json_without_annotations(p))
    raise InputError(f"{p}: unknown input format {suffix!r} (use .jsonl, .csv, .tsv, or COCO .json with --annotations)")


def _json_without_annotations(p: Path) -> str:
    """Why a .json input without --annotations is refused, and what to do: rows of
    ``{candidate, references}`` belong in a .jsonl file, one object per line; COCO results need
    their captions file."""
    coco = (f"{p}: a .json input is COCO results ([{{\"image_id\", \"caption\"}}, ...]) and needs --annotations "
            "with the COCO captions file")
    try:
        doc = _load_json(p)
    except (InputError, OSError):
        return coco + "; rows with their references go in a .jsonl file, one JSON object per line."
    rows = doc if isinstance(doc, list) else []
    if rows and isinstance(rows[0], dict) and {"candidate", "references"} <= rows[0].keys():
        return (f"{p}: holds a JSON list of {{\"candidate\", \"references\"}} rows; capeval reads such rows from a "
                ".jsonl file with one JSON object per line (the list's items, one a line), or from CSV. A .json "
                "input is COCO results, read with --annotations.")
    return coco + "."


def read_input_images(path: str | Path, annotations: str | Path | None = None):
    """:func:`read_input` plus each item's image: the JSONL/CSV ``image`` field (None where
    absent), or the COCO ``image_id``; ``images`` is None when no item names one."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"input file not found: {p}")
    if annotations is not None:
        ids, cands, refs = read_coco(p, annotations)
        return ids, cands, refs, list(ids)
    suffix = p.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        ids, cands, refs, images = _read_jsonl(p)
    elif suffix in (".csv", ".tsv"):
        ids, cands, refs, images = _read_csv(p)
    else:
        return (*read_input(p), None)
    return ids, cands, refs, (images if any(i is not None for i in images) else None)


#: What ``write_result`` writes, by the output's suffix.
OUTPUT_SUFFIXES = (".json", ".jsonl", ".ndjson", ".csv", ".parquet")


def _check_output_suffix(p: Path) -> None:
    # Anything else would be written as a JSON document under a name promising another format.
    if p.suffix.lower() not in OUTPUT_SUFFIXES:
        raise InputError(f"{p}: unknown output format {p.suffix!r} (use {', '.join(OUTPUT_SUFFIXES)})")


def output_files(path: str | Path) -> list[tuple[Path, Path | None]]:
    """The files :func:`write_result` writes for ``path``, as :func:`capeval.outputs.check_outputs`
    takes them: ``(path, None)`` and, for row files and CSV, ``(<name>.signatures.json, path)``.
    An unknown suffix raises :class:`InputError`."""
    from .rowfiles import signatures_path

    p = Path(path)
    _check_output_suffix(p)
    files: list[tuple[Path, Path | None]] = [(p, None)]
    if p.suffix.lower() in (".jsonl", ".ndjson", ".parquet", ".csv"):
        files.append((signatures_path(p), p))
    return files


def write_result(result: Result, path: str | Path, ids: Sequence) -> None:
    """Per-caption scores of ``result`` in ``path`` (.json document; .jsonl/.parquet/.csv row
    file plus ``<name>.signatures.json``). Every file is written atomically (capeval.outputs):
    a failed write leaves the previous files, never a truncated one. Existing files are
    replaced; the command line refuses them unless --overwrite."""
    from .outputs import atomic_write

    p = Path(path)
    _check_output_suffix(p)
    if p.suffix.lower() in (".jsonl", ".ndjson", ".parquet"):  # row files, as streamed runs write them
        from .rowfiles import write_rows

        write_rows(p, list(ids), result.per_caption, result.corpus, result.signatures)
        return
    if p.suffix.lower() == ".csv":
        import os

        from .outputs import temp_path
        from .rowfiles import commit_pair

        # Rows and signatures as a pair: both on disk before either is renamed into place.
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = temp_path(p)
        try:
            with tmp.open("w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                names = list(result.per_caption)
                w.writerow(["id", *names])
                for i, key in enumerate(ids):
                    w.writerow([key, *(repr(float(result.per_caption[m][i])) for m in names)])
                f.flush()
                os.fsync(f.fileno())
            commit_pair(tmp, p, result.corpus, result.signatures)
        finally:
            tmp.unlink(missing_ok=True)
        return
    payload = result.to_dict(per_caption=True, ids=list(ids))
    atomic_write(p, json.dumps(payload, indent=1, ensure_ascii=False))
