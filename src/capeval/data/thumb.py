"""THumB 1.0, MSCOCO part (Kasai et al., NAACL 2022; jungokasai/THumB).

``thumb/mscoco/mscoco_THumB-1.0.jsonl`` holds one row per (system, image): ``SYS``,
``seg_id``, ``set_id``, ``hyp``, ``image`` (the COCO file name), the scores ``P``, ``R`` and
``human_score`` = (P + R) / 2 minus the fluency, conciseness and inclusive-language
penalties. ``thumb/mscoco/mscoco_references.json`` is JSON Lines despite its name:
``seg_id``, ``set_id`` and ``refs``, the image's COCO captions without the one the Human
system was given. Captions are read as released: untokenised and truecased.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError
from ._common import check_options, id_text as _key, reject_unknown
from ._pinned import checked_file, data_tag, field, read_json_lines, reference_list, score_field, text_field
from .records import CorrelationTable, SystemTable

FOLDER = "thumb"
SCORES = "mscoco/mscoco_THumB-1.0.jsonl"
REFERENCES = "mscoco/mscoco_references.json"
HUMAN = "Human"
#: data option → field of the scores file
TARGETS = {"total": "human_score", "P": "P", "R": "R"}


def load_thumb(root: Path, rows: str = "machine", target: str = "total", table: str = "instance",
               **options) -> CorrelationTable | SystemTable:
    """THumB rows against the human score, Pearson r as in the paper (Kendall τc beside it).

    ``rows``: ``"machine"`` (default) keeps the 2,000 rows of the four captioning models,
    ``"all"`` adds the 500 rows of the ``Human`` system. ``target``: ``"total"``
    (``human_score``), ``"P"`` (precision) or ``"R"`` (recall). ``table="system"`` gives a
    :class:`SystemTable`: one caption list per system over the images every system captioned,
    with the system's mean ``target`` as its human score (the system-level correlation).
    """
    reject_unknown("thumb", options)
    check_options("thumb", "rows", rows, ("machine", "all"))
    check_options("thumb", "target", target, tuple(TARGETS))
    check_options("thumb", "table", table, ("instance", "system"))
    tags: dict[str, str] = {}
    scores_path = checked_file(root, FOLDER, SCORES, "thumb", tags)
    refs_path = checked_file(root, FOLDER, REFERENCES, "thumb", tags)
    refs = _references(refs_path)
    records = _rows(scores_path, refs, TARGETS[target], keep_human=rows == "all")
    protocol = {"dataset": "thumb", "systems": rows, "target": target, "refs": "coco-minus-human",
                "text": "as-released", **data_tag(tags)}
    if table == "system":
        return _system_table(records, refs, protocol)
    return CorrelationTable(
        name="thumb",
        candidates=[r["hyp"] for r in records],
        references=[refs[r["seg_id"]][1] for r in records],
        human=np.array([r["score"] for r in records], dtype=float),
        groups=[r["seg_id"] for r in records],
        statistic="pearson",
        protocol={**protocol, "rows": str(len(records))},
        extra={"system": [r["sys"] for r in records], "set_id": [r["set_id"] for r in records]},
        images=[r["image"] for r in records],
    )


def _references(path: Path) -> dict[str, tuple[str, list[str]]]:
    """seg_id → (set_id, references)."""
    out: dict[str, tuple[str, list[str]]] = {}
    first: dict[str, int] = {}
    for lineno, rec in read_json_lines(path, f"{FOLDER}/{REFERENCES}"):
        where = f"{FOLDER}/{REFERENCES} line {lineno}"
        seg = _key(field(rec, "seg_id", where), "seg_id", where)
        if seg in out:
            raise InputError(f"{where}: duplicate seg_id {seg!r} (first at line {first[seg]})")
        first[seg] = lineno
        out[seg] = (_key(field(rec, "set_id", where), "set_id", where),
                    reference_list(field(rec, "refs", where), where))
    return out


def _rows(path: Path, refs: dict, score_key: str, *, keep_human: bool) -> list[dict]:
    rows = []
    seen: dict[tuple[str, str], int] = {}
    for lineno, rec in read_json_lines(path, f"{FOLDER}/{SCORES}"):
        where = f"{FOLDER}/{SCORES} line {lineno}"
        sys_id = text_field(rec, "SYS", where)
        seg = _key(field(rec, "seg_id", where), "seg_id", where)
        set_id = _key(field(rec, "set_id", where), "set_id", where)
        if (sys_id, seg) in seen:
            raise InputError(f"{where}: duplicate row for system {sys_id!r} and seg_id {seg!r} "
                             f"(first at line {seen[(sys_id, seg)]})")
        seen[(sys_id, seg)] = lineno
        if seg not in refs:
            raise InputError(f"{where}: seg_id {seg!r} has no references in {FOLDER}/{REFERENCES}")
        if refs[seg][0] != set_id:
            raise InputError(f"{where}: seg_id {seg!r} has set_id {set_id!r} here but {refs[seg][0]!r} in "
                             f"{FOLDER}/{REFERENCES}; the files do not align")
        row = {"sys": sys_id, "seg_id": seg, "set_id": set_id, "hyp": text_field(rec, "hyp", where),
               "image": text_field(rec, "image", where), "score": score_field(rec, score_key, where)}
        if sys_id != HUMAN or keep_human:
            rows.append(row)
    if not rows:
        raise InputError(f"{FOLDER}/{SCORES}: no rows to evaluate")
    return rows


def _system_table(records: list[dict], refs: dict, protocol: dict[str, str]) -> SystemTable:
    systems = list(dict.fromkeys(r["sys"] for r in records))
    segs = list(dict.fromkeys(r["seg_id"] for r in records))
    by = {(r["sys"], r["seg_id"]): r for r in records}
    for s in systems:
        missing = [g for g in segs if (s, g) not in by]
        if missing:
            raise InputError(f"thumb: system {s!r} has no caption for seg_id {missing[0]!r} "
                             f"({len(missing)} missing); a system-level table needs every system on every image")
    images = [by[(systems[0], g)]["image"] for g in segs]
    return SystemTable(
        name="thumb",
        systems={s: [by[(s, g)]["hyp"] for g in segs] for s in systems},
        references=[refs[g][1] for g in segs],
        image_ids=segs,
        human={s: float(np.mean([by[(s, g)]["score"] for g in segs])) for s in systems},
        protocol={**protocol, "table": "system", "images": str(len(segs))},
        images=images,
    )
