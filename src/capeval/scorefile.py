"""A user's scores file: one number per unit id, from any tool (``capeval bench --scores``).

JSONL lines ``{"id": ..., "score": ...}`` or a CSV/TSV with the header ``id,score``. Strict:
a bad line, a duplicate id, a value that is not a finite number is an error naming the line;
:func:`scores_for` then refuses ids the benchmark does not have and ids it lacks, naming them.
"""
from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .guards import MAX_SCORES_BYTES, loads_json, parse_id, parse_number, text_lines
from .errors import InputError


def unit_id(candidate: str, references: Sequence[str], image: str | None) -> str:
    """The id of a scoring unit in exported unit lists and scores files: a content hash of its
    candidate, references and image file name, so it is the same in every run and version."""
    import hashlib

    blob = json.dumps([candidate, list(references), image], ensure_ascii=False, separators=(",", ":"))
    return "u" + hashlib.sha256(blob.encode("utf-8")).hexdigest()[:24]


@dataclass(frozen=True)
class ScoresFile:
    path: Path
    sha256: str
    scores: dict[str, float]  # id -> score, in file order


def _number(path, where: str, value) -> float:
    # One parser for every number a user's file holds (capeval.guards): JSON true/false and
    # null, "1_000", "٣" (float() would read both), NaN and inf are refused.
    return parse_number(value, f"{path}:{where}")


def _key(path, where: str, value) -> str:
    return parse_id(value, f"{path}:{where}")


def _rows_jsonl(path: Path, lines):
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        # NaN/Infinity stay strings: parse_number refuses them as not finite
        obj = loads_json(line, f"{path}:{lineno}", parse_constant=lambda c: c)
        if not isinstance(obj, dict) or "id" not in obj or "score" not in obj:
            raise InputError(f"{path}:{lineno}: expected an object with 'id' and 'score'")
        if isinstance(obj["score"], str):
            raise InputError(f"{path}:{lineno}: score {obj['score']!r} is not a number"
                             + ("; scores must be finite (no NaN or inf)" if obj["score"] in ("NaN", "Infinity", "-Infinity") else ""))
        yield str(lineno), obj["id"], obj["score"]


def _rows_csv(path: Path, lines):
    tsv = path.suffix.lower() == ".tsv"
    reader = csv.reader(lines, delimiter="\t" if tsv else ",", strict=True)
    try:
        header = [h.strip().lower() for h in next(reader)]
    except StopIteration:
        raise InputError(f"{path}: empty file; expected the header id,score") from None
    except csv.Error as e:
        raise InputError(f"{path}:1: not valid CSV ({e})") from None
    if header != ["id", "score"]:
        raise InputError(f"{path}:1: header is {','.join(header)!r}; expected exactly 'id,score'")
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise InputError(f"{path}:{reader.line_num}: not valid CSV ({e})") from None
        if not row:
            continue
        if len(row) != 2:
            raise InputError(f"{path}:{reader.line_num}: {len(row)} cells; expected id,score")
        yield str(reader.line_num), row[0], row[1].strip()


def read_scores(path: str | Path) -> ScoresFile:
    """The scores of a regular file of at most :data:`capeval.guards.MAX_SCORES_BYTES`, read in
    lines (never held whole) and hashed as it is read, so the digest is that of what was read."""
    import hashlib

    p = Path(path)
    if not p.exists():
        raise InputError(f"scores file not found: {p}")
    suffix = p.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        reader, newline = _rows_jsonl, "\n"
    elif suffix in (".csv", ".tsv"):
        reader, newline = _rows_csv, ""
    else:
        raise InputError(f"{p}: unknown scores format {suffix!r}; use .jsonl ({{\"id\", \"score\"}} per line) "
                         "or .csv (header id,score)")
    digest = hashlib.sha256()
    rows = reader(p, text_lines(p, "scores file", MAX_SCORES_BYTES, newline=newline, hasher=digest))
    scores: dict[str, float] = {}
    first: dict[str, str] = {}
    for where, key, value in rows:
        k = _key(p, where, key)
        if k in scores:
            raise InputError(f"{p}:{where}: duplicate id {k!r} (first on line {first[k]})")
        scores[k] = _number(p, where, value)
        first[k] = where
    if not scores:
        raise InputError(f"{p}: no scores")
    return ScoresFile(p, digest.hexdigest(), scores)


def _some(ids: Sequence[str], k: int = 5) -> str:
    shown = ", ".join(repr(i) for i in ids[:k])
    return shown + (f" and {len(ids) - k} more" if len(ids) > k else "")


def scores_for(sf: ScoresFile, ids: Sequence[str], what: str) -> np.ndarray:
    """The scores of ``ids`` (unit ids of ``what``, a benchmark), in that order. The file must
    hold exactly the benchmark's distinct ids: missing and extra ones are named."""
    wanted = dict.fromkeys(ids)
    missing = [i for i in wanted if i not in sf.scores]
    extra = [i for i in sf.scores if i not in wanted]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"{len(missing)} unit id(s) of {what} missing: {_some(missing)}")
        if extra:
            parts.append(f"{len(extra)} id(s) that are not units of {what}: {_some(extra)}")
        raise InputError(f"{sf.path}: {len(sf.scores)} scores for {len(wanted)} units; " + "; ".join(parts)
                         + f". Score exactly the units `capeval data export {what}` writes")
    return np.array([sf.scores[i] for i in ids], dtype=float)
