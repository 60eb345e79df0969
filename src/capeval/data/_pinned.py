"""Inputs of the THumB, Nebula and Polaris loaders, and the parsing the three share.

``capeval bench`` refuses files that differ from their pinned SHA-256 before it loads them
(:mod:`.integrity`). These loaders also hash what they read, so that a table built from other
bytes says so itself: a modified file, or one capeval has no checksum for (the Polaris CSVs),
puts its own digest in the table's protocol, and so in the signature of every number.
"""
from __future__ import annotations

from pathlib import Path, PurePosixPath

from ..digests import sha256_file
from ..errors import InputError
from ._common import need, read_text
from .checksums import folder_sums

#: the suffixes an ``imgid`` may already carry; any other id is a bare name of a JPEG
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")


def checked_file(root: Path, folder: str, rel: str, benchmark: str, tags: dict[str, str]) -> Path:
    """``root/folder/rel`` (a named :class:`ResourceNotFound` when absent), hashed against its
    pinned SHA-256: a file that is not the pinned one adds ``<file name>: modified-<sha12>``
    (or ``unpinned-<sha12>`` when capeval has no checksum for it) to ``tags``, which the
    loader puts in the table's protocol."""
    path = need(root, f"{folder}/{rel}", benchmark)
    expected = (folder_sums(root, folder) or {}).get(rel)
    got = sha256_file(path)
    if expected is None:
        tags[PurePosixPath(rel).name] = f"unpinned-{got[:12]}"
    elif got != expected:
        tags[PurePosixPath(rel).name] = f"modified-{got[:12]}"
    return path


def data_tag(tags: dict[str, str]) -> dict[str, str]:
    """The protocol entry for ``tags``: nothing when every file is the pinned one."""
    if not tags:
        return {}
    return {"files": "+".join(f"{name}={tag}" for name, tag in sorted(tags.items()))}


def read_json(path: Path, rel: str):
    from ..guards import loads_json

    return loads_json(read_text(path), rel)  # the JSON door: depth and integer limits


def read_json_lines(path: Path, rel: str) -> list[tuple[int, dict]]:
    """``(line number, object)`` for every non-blank line of a JSON Lines file."""
    from ..guards import loads_json

    out = []
    text = read_text(path)
    for i, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        obj = loads_json(line, f"{rel} line {i}")
        if not isinstance(obj, dict):
            raise InputError(f"{rel} line {i}: expected a JSON object, got {type(obj).__name__}")
        out.append((i, obj))
    return out


def field(record: dict, key: str, where: str):
    if key not in record:
        raise InputError(f"{where}: no field {key!r}")
    return record[key]


def text_field(record: dict, key: str, where: str) -> str:
    value = field(record, key, where)
    if not isinstance(value, str):
        raise InputError(f"{where}: field {key!r} is {type(value).__name__}, not text")
    return value


def score_field(record: dict, key: str, where: str) -> float:
    from ..guards import parse_number

    return parse_number(field(record, key, where), where, key)


def reference_list(value, where: str) -> list[str]:
    if not isinstance(value, list) or not value:
        raise InputError(f"{where}: references must be a non-empty list of captions, got {value!r:.80}")
    for j, ref in enumerate(value):
        if not isinstance(ref, str):
            raise InputError(f"{where}: reference {j} is {type(ref).__name__}, not text")
    return list(value)


def image_name(imgid, where: str) -> str:
    """An ``imgid`` as an image file name: the Polaris CSVs give the file name, the EXPERT
    JSON files the bare id (its own code opens ``<imgid>.jpg``)."""
    if isinstance(imgid, bool) or not isinstance(imgid, (str, int)) or not str(imgid).strip():
        raise InputError(f"{where}: imgid {imgid!r} is not an image id")
    name = str(imgid).strip()
    if "/" in name or "\\" in name:
        raise InputError(f"{where}: imgid {name!r} is a path, not a file name")
    return name if name.lower().endswith(IMAGE_SUFFIXES) else f"{name}.jpg"


def scored_items(data, rel: str, *, with_refs: bool) -> list[dict]:
    """The items of a Nebula/Polaris-style JSON list ``[{imgid, mt, score[, refs]}, ...]``,
    checked; each gains ``image`` (its file name) and a string ``imgid``."""
    if not isinstance(data, list) or not data:
        raise InputError(f"{rel}: expected a non-empty JSON list of items")
    out = []
    for i, rec in enumerate(data):
        where = f"{rel} item {i}"
        if not isinstance(rec, dict):
            raise InputError(f"{where}: expected a JSON object, got {type(rec).__name__}")
        item = {"imgid": str(field(rec, "imgid", where)), "image": image_name(field(rec, "imgid", where), where),
                "mt": text_field(rec, "mt", where), "score": score_field(rec, "score", where)}
        if with_refs:
            item["refs"] = reference_list(field(rec, "refs", where), where)
        out.append(item)
    return out
