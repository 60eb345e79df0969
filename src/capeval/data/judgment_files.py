"""Human judgments a user brings: ratings, pairwise preferences or system scores in a file.

``capeval bench --file judgments.jsonl`` meta-evaluates metrics on such a file exactly as on a
named benchmark: the file becomes the same table types (:mod:`capeval.data.records`) and goes
through the same runner, statistics and report. The three kinds are told apart by their fields
(docs/DATA_FORMATS.md, *Your own human judgments*):

- ratings: ``candidate``, ``references``, ``human`` (optional ``image``, ``id``, ``group``);
- pairwise: ``a``, ``b``, ``references``, ``preferred`` (``"a"``/``"b"``/``"tie"`` or 0/1/0.5;
  optional ``image``, ``id``, ``category``);
- systems: ``system``, ``image_id``, ``candidate``, ``references``, ``human`` (the system's
  human score, the same on every row of a system; optional ``image``).

JSONL (one object per line), CSV/TSV (a header row; references as ``ref1, ref2, ...`` columns or
one ``references`` column holding a JSON list) and Parquet are read. The file is read once,
through the file door, and its SHA-256 (of the bytes parsed) goes into the table's protocol and
so into every signature. Every malformed row is refused naming its line.
"""
from __future__ import annotations

import csv
import hashlib
import io
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..guards import MAX_TABLE_BYTES, decode_utf8, loads_json, parse_id, parse_number, read_regular
from ..errors import InputError
from .records import CorrelationTable, PairwiseTable, SystemTable

KINDS = ("ratings", "pairwise", "systems")
#: the fields that tell the kinds apart
_MARKERS = {"pairwise": ("a", "b", "preferred"), "systems": ("system",), "ratings": ("candidate", "human")}
_REF_COLUMN = re.compile(r"ref(?:erence)?_?(\d+)")
_PREFERRED = {"a": 0.0, "b": 1.0, "tie": 0.5}
STATISTICS = ("kendall_tau_c", "kendall_tau_b", "pearson", "spearman", "r2")


def load_judgments_file(path: str | Path, *, kind: str | None = None, statistic: str = "kendall_tau_c",
                        name: str | None = None) -> CorrelationTable | PairwiseTable | SystemTable:
    """The table of a user's judgment file. ``kind`` (``ratings``/``pairwise``/``systems``) is
    found from the fields when not given; ``statistic`` is a ratings file's headline statistic;
    ``name`` (default ``file:<file name>``) names the table in results and messages."""
    p = Path(path)
    data = read_regular(p, "judgment file", MAX_TABLE_BYTES)
    digest = hashlib.sha256(data).hexdigest()
    rows = _rows(p, data)
    if not rows:
        raise InputError(f"{p}: no rows")
    found = _kind_of(p, rows[0][1], kind)
    if statistic not in STATISTICS:
        raise InputError(f"unknown statistic {statistic!r}; choose one of {', '.join(STATISTICS)}")
    label = name or f"file:{p.name}"
    protocol = {"source": "file", "file": f"sha256:{digest}", "kind": found}
    build = {"ratings": _ratings, "pairwise": _pairwise, "systems": _systems}[found]
    return build(p, rows, label, protocol, statistic)


def _rows(p: Path, data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """``(where, record)`` for every row: ``where`` names the line (or Parquet row) in messages."""
    suffix = p.suffix.lower()
    if suffix == ".parquet":
        return _parquet_rows(p, data)
    text = decode_utf8(p, data)
    if suffix in (".jsonl", ".ndjson"):
        return _jsonl_rows(p, text)
    if suffix in (".csv", ".tsv"):
        return _csv_rows(p, text, "\t" if suffix == ".tsv" else ",")
    raise InputError(f"{p}: judgment files are .jsonl (one object per line), .csv, .tsv or .parquet; "
                     f"got {suffix or 'no suffix'!r}")


def _jsonl_rows(p: Path, text: str) -> list[tuple[str, dict[str, Any]]]:
    rows = []
    # "\n" only, as capeval's JSONL reader: U+2028 inside a caption is not a line end
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        where = f"{p}:{lineno}"
        obj = loads_json(line, where)
        if not isinstance(obj, dict):
            raise InputError(f"{where}: expected a JSON object (one object per line), got {type(obj).__name__}")
        rows.append((where, obj))
    return rows


def _csv_rows(p: Path, text: str, delimiter: str) -> list[tuple[str, dict[str, Any]]]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = next(reader, None)
    if not header:
        raise InputError(f"{p}: no header row")
    header = [h.strip() for h in header]
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise InputError(f"{p}: column(s) {', '.join(map(repr, dup))} appear more than once in the header")
    ref_cols = sorted(((int(m.group(1)), i) for i, h in enumerate(header) if (m := _REF_COLUMN.fullmatch(h))))
    rows = []
    for row in reader:
        where = f"{p}:{reader.line_num}"
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InputError(f"{where}: {len(row)} cells for {len(header)} columns")
        obj: dict[str, Any] = {h: row[i] for i, h in enumerate(header) if not _REF_COLUMN.fullmatch(h)}
        if "references" in obj:
            obj["references"] = loads_json(obj["references"], f"{where}: column 'references'")
        elif ref_cols:
            # a shorter reference list leaves its last columns empty
            obj["references"] = [row[i] for _, i in ref_cols if row[i] != ""]
        rows.append((where, obj))
    return rows


def _parquet_rows(p: Path, data: bytes) -> list[tuple[str, dict[str, Any]]]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"{p}: reading Parquet needs pyarrow: pip install -e '.[ray]'") from None
    try:
        pf = pq.ParquetFile(pa.BufferReader(data))
        size = sum(pf.metadata.row_group(i).total_byte_size for i in range(pf.metadata.num_row_groups))
        if size > MAX_TABLE_BYTES:
            raise InputError(f"{p}: {size:,} bytes uncompressed, over the limit of {MAX_TABLE_BYTES:,} for a table")
        records = pf.read().to_pylist()
    except (pa.ArrowException, OSError) as e:
        raise InputError(f"{p}: not a readable Parquet file ({e})") from None
    return [(f"{p}: row {i}", rec) for i, rec in enumerate(records)]


def _kind_of(p: Path, first: dict[str, Any], kind: str | None) -> str:
    if kind is not None:
        if kind not in KINDS:
            raise InputError(f"unknown judgment kind {kind!r}; choose one of {', '.join(KINDS)}")
        return kind
    for k in ("pairwise", "systems", "ratings"):
        if all(f in first for f in _MARKERS[k]):
            return k
    raise InputError(f"{p}: the first row's fields ({', '.join(sorted(map(str, first)))}) match no judgment "
                     "kind: ratings need candidate, references, human; pairwise a, b, references, preferred; "
                     "systems system, image_id, candidate, references, human (docs/DATA_FORMATS.md)")


def _field(where: str, rec: dict[str, Any], key: str, optional: bool = False) -> Any:
    if key not in rec or rec[key] is None:
        if optional:
            return None
        raise InputError(f"{where}: missing field {key!r}")
    return rec[key]


def _text(where: str, rec: dict[str, Any], key: str) -> str:
    value = _field(where, rec, key)
    if not isinstance(value, str):
        raise InputError(f"{where}: {key!r} must be text, got {type(value).__name__}")
    return value


def _references(where: str, rec: dict[str, Any]) -> list[str]:
    refs = _field(where, rec, "references")
    if isinstance(refs, str) or not isinstance(refs, list) or not refs:
        raise InputError(f"{where}: 'references' must be a non-empty list of strings")
    for j, r in enumerate(refs):
        if not isinstance(r, str):
            raise InputError(f"{where}: reference {j} must be text, got {type(r).__name__}")
    return refs


def _image(where: str, rec: dict[str, Any]) -> str | None:
    img = _field(where, rec, "image", optional=True)
    if img is None or img == "":
        return None
    if not isinstance(img, str) or not img.strip() or "\x00" in img:
        raise InputError(f"{where}: 'image' must be a file name or path, got {img!r:.80}")
    return img


def _images(values: list[str | None], p: Path) -> list[str | None] | None:
    if all(v is None for v in values):
        return None
    return values


def _ratings(p: Path, rows, name: str, protocol: dict[str, str], statistic: str) -> CorrelationTable:
    cands, refs, human, groups, images = [], [], [], [], []
    for i, (where, rec) in enumerate(rows):
        cands.append(_text(where, rec, "candidate"))
        refs.append(_references(where, rec))
        human.append(parse_number(_field(where, rec, "human"), where, "human rating"))
        img = _image(where, rec)
        images.append(img)
        group = rec.get("group", rec.get("id", img if img is not None else i))
        groups.append(parse_id(group, where))
    return CorrelationTable(name, cands, refs, np.asarray(human, dtype=float), groups, statistic,
                            protocol, images=_images(images, p))


def _preferred(where: str, value: Any) -> float:
    if isinstance(value, str) and value.strip().lower() in _PREFERRED:
        return _PREFERRED[value.strip().lower()]
    number = parse_number(value, where, "preferred")
    if number not in (0.0, 0.5, 1.0):
        raise InputError(f"{where}: preferred is {value!r}; expected \"a\", \"b\", \"tie\", 0, 1 or 0.5")
    return number


def _pairwise(p: Path, rows, name: str, protocol: dict[str, str], statistic: str) -> PairwiseTable:
    a, b, refs, labels, cats, images = [], [], [], [], [], []
    for where, rec in rows:
        a.append(_text(where, rec, "a"))
        b.append(_text(where, rec, "b"))
        refs.append(_references(where, rec))
        labels.append(_preferred(where, _field(where, rec, "preferred")))
        cat = rec.get("category", "all")
        if not isinstance(cat, str) or not cat.strip():
            raise InputError(f"{where}: 'category' must be non-empty text, got {cat!r:.80}")
        cats.append(cat)
        images.append(_image(where, rec))
    ties = sum(1 for x in labels if x == 0.5)
    protocol = {**protocol, "human_ties": str(ties)} if ties else protocol
    return PairwiseTable(name, a, b, refs, np.asarray(labels, dtype=float), cats, protocol,
                         images=_images(images, p))


def _systems(p: Path, rows, name: str, protocol: dict[str, str], statistic: str) -> SystemTable:
    by_system: dict[str, dict[str, str]] = {}
    human: dict[str, float] = {}
    refs_of: dict[str, list[str]] = {}
    image_of: dict[str, str | None] = {}
    first_at: dict[str, str] = {}
    for where, rec in rows:
        system = parse_id(_field(where, rec, "system"), where)
        image_id = parse_id(_field(where, rec, "image_id"), where)
        caps = by_system.setdefault(system, {})
        if image_id in caps:
            raise InputError(f"{where}: system {system!r} has a second caption for image {image_id!r}")
        caps[image_id] = _text(where, rec, "candidate")
        refs = _references(where, rec)
        if refs_of.setdefault(image_id, refs) != refs:
            raise InputError(f"{where}: the references of image {image_id!r} differ from those at "
                             f"{first_at[image_id]}; every system is scored against the same references")
        image_of.setdefault(image_id, _image(where, rec))
        first_at.setdefault(image_id, where)
        score = parse_number(_field(where, rec, "human"), where, "human score")
        if human.setdefault(system, score) != score:
            raise InputError(f"{where}: system {system!r} has human score {score!r} here and "
                             f"{human[system]!r} on an earlier row; it is one number per system")
    order = list(refs_of)
    for system, caps in by_system.items():
        missing = [i for i in order if i not in caps]
        if missing:
            raise InputError(f"{p}: system {system!r} has no caption for image {missing[0]!r} "
                             f"({len(missing)} image(s) missing); every system captions every image")
    if len(by_system) < 2:
        raise InputError(f"{p}: {len(by_system)} system(s); system-level agreement needs at least two")
    systems = {s: [caps[i] for i in order] for s, caps in by_system.items()}
    return SystemTable(name, systems, [refs_of[i] for i in order], order, human, protocol,
                       images=_images([image_of[i] for i in order], p))


def write_judgments_file(table: CorrelationTable | PairwiseTable | SystemTable, path: str | Path) -> Path:
    """A table in the bring-your-own format, as JSONL: a named benchmark's rows exported, to be
    read back by :func:`load_judgments_file` (``capeval bench --file``)."""
    import json

    from ..outputs import atomic_write

    def img(i: int) -> dict[str, str]:
        return {"image": table.images[i]} if table.images is not None and table.images[i] else {}

    lines: list[dict[str, Any]] = []
    if isinstance(table, CorrelationTable):
        if table.references is None:
            raise InputError(f"{table.name}: a table without references cannot be written as ratings")
        lines = [{"id": table.groups[i], "candidate": table.candidates[i], "references": list(table.references[i]),
                  "human": float(table.human[i]), **img(i)} for i in range(len(table))]
        for i, row in enumerate(lines):  # groups are not unique row ids: keep them as groups
            row["group"] = row.pop("id")
    elif isinstance(table, PairwiseTable):
        names = {0.0: "a", 1.0: "b", 0.5: "tie"}
        lines = [{"a": table.candidates_a[i], "b": table.candidates_b[i], "references": list(table.references[i]),
                  "preferred": names[float(table.labels[i])], "category": str(table.categories[i]), **img(i)}
                 for i in range(len(table))]
    else:
        if table.human is None:
            raise InputError(f"{table.name}: a system table without human scores cannot be written")
        lines = [{"system": s, "image_id": table.image_ids[i], "candidate": caps[i],
                  "references": list(table.references[i]), "human": float(table.human[s]), **img(i)}
                 for s, caps in table.systems.items() for i in range(len(table))]
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in lines)
    out = Path(path)
    atomic_write(out, text.encode("utf-8"))
    return out
