"""Reading caption files (COCO results + annotations, JSONL, CSV) and writing score files.

Readers return ``(ids, candidates, references)`` aligned lists; problems raise
:class:`InputError` naming the file and the item (line, row or id).
"""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

from .errors import InputError
from .result import Result


def read_text(path: str | Path) -> str:
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(
            f"{path}: not valid UTF-8 (byte {e.start}, line {line}: {data[e.start:e.start + 8]!r}). "
            "Re-encode the file as UTF-8."
        ) from None
    return text[1:] if text.startswith("\ufeff") else text  # tolerate a BOM


def _load_json(path) -> object:
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None


def read_jsonl(path: str | Path):
    """Lines of ``{"id": ..., "candidate": str, "references": [str, ...]}``."""
    ids, cands, refs = [], [], []
    seen: dict = {}
    # split on "\n" only: str.splitlines would also split inside captions on U+2028 etc.,
    # which validation must see (and read as spaces, or refuse in strict mode).
    for lineno, line in enumerate(read_text(path).split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{path}:{lineno}: invalid JSON ({e.msg})") from None
        if not isinstance(obj, dict):
            raise InputError(f"{path}:{lineno}: expected an object")
        for key in ("candidate", "references"):
            if key not in obj:
                raise InputError(f"{path}:{lineno}: missing key {key!r}")
        key = obj.get("id", lineno)
        if not isinstance(key, (str, int)):
            raise InputError(f"{path}:{lineno}: id must be a string or integer, got {key!r}")
        if key in seen:
            raise InputError(f"{path}:{lineno}: duplicate id {key!r} (first on line {seen[key]})")
        seen[key] = lineno
        if not isinstance(obj["references"], list):
            raise InputError(f"{path}:{lineno}: 'references' must be a list of strings")
        ids.append(key)
        cands.append(obj["candidate"])
        refs.append(obj["references"])
    if not ids:
        raise InputError(f"{path}: no records")
    return ids, cands, refs


def read_coco(results: str | Path, annotations: str | Path):
    """COCO results list ``[{"image_id", "caption"}]`` + COCO captions annotation file.

    As in pycocoevalcap, the scored images are those in the results file; annotation images
    without a result are ignored. A result whose image has no annotation, or two results
    for one image, is an error.
    """
    res = _load_json(results)
    ann = _load_json(annotations)
    if isinstance(res, dict) and "annotations" in res:
        res = res["annotations"]
    if not isinstance(res, list):
        raise InputError(f"{results}: expected a list of {{'image_id', 'caption'}} objects")
    if not isinstance(ann, dict) or "annotations" not in ann:
        raise InputError(f"{annotations}: expected a COCO captions file with an 'annotations' list")
    gts: dict = {}
    for j, a in enumerate(ann["annotations"]):
        try:
            gts.setdefault(a["image_id"], []).append(a["caption"])
        except (KeyError, TypeError):
            raise InputError(f"{annotations}: annotation {j} lacks 'image_id' or 'caption'") from None
    ids, cands, refs = [], [], []
    seen: dict = {}
    for j, r in enumerate(res):
        try:
            img, cap = r["image_id"], r["caption"]
        except (KeyError, TypeError):
            raise InputError(f"{results}: result {j} lacks 'image_id' or 'caption'") from None
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


def read_csv(path: str | Path):
    """CSV with a header: ``id``, ``candidate`` and one or more ``ref*`` columns
    (``ref1``, ``ref2``, ... or ``reference_1``...). Empty reference cells are skipped."""
    text = read_text(path)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if reader.fieldnames is None or "candidate" not in reader.fieldnames:
        raise InputError(f"{path}: needs a header with a 'candidate' column and 'ref*' columns")
    ref_cols = [c for c in reader.fieldnames if c.lower().startswith("ref")]
    if not ref_cols:
        raise InputError(f"{path}: no reference columns (names starting with 'ref')")
    ids, cands, refs = [], [], []
    seen: dict = {}
    for rowno, row in enumerate(reader, 2):
        key = row.get("id") or str(rowno)
        if key in seen:
            raise InputError(f"{path}: duplicate id {key!r} on rows {seen[key]} and {rowno}")
        seen[key] = rowno
        ids.append(key)
        cands.append(row["candidate"] if row["candidate"] is not None else "")
        refs.append([row[c] for c in ref_cols if row.get(c)])
    return ids, cands, refs


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
        raise InputError(f"{p}: a .json input is read as COCO results; pass --annotations with the COCO captions file")
    raise InputError(f"{p}: unknown input format {suffix!r} (use .jsonl, .csv, or COCO .json with --annotations)")


def write_result(result: Result, path: str | Path, ids: Sequence) -> None:
    p = Path(path)
    if p.suffix.lower() == ".csv":
        with p.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            names = list(result.per_caption)
            w.writerow(["id", *names])
            for i, key in enumerate(ids):
                w.writerow([key, *(repr(float(result.per_caption[m][i])) for m in names)])
        sig = p.with_suffix(".signatures.json")
        sig.write_text(json.dumps({"corpus": result.corpus, "signatures": result.signatures}, indent=2))
        return
    payload = result.to_dict(per_caption=True, ids=list(ids))
    p.write_text(json.dumps(payload, indent=1, ensure_ascii=False), encoding="utf-8")
