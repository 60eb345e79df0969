"""COMPOSITE (Aditya et al. 2015) from UMIC's decoded copy (docs/DATA_FORMATS.md, COMPOSITE)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import InputError
from ._common import (check_options, id_text, json_int, json_number, loose_key, need, read_text, references_for,
                      reject_unknown, ws)
from .records import CorrelationTable

JSONL = "composite/composite_umic_decoded.jsonl"
_SUBSET_REFS = {"flickr8k": "flickr8k", "flickr30k": "flickr30k", "coco": "coco"}

#: reference rules; the default is the inferred one that reproduces the paper within 0.2
REFS = {
    "image-minus-human": "image-minus-human",
    "all5": "image-all5",
    "per-row": "row-minus-candidate",
}


def load_composite(root: Path, refs: str = "image-minus-human", **options) -> CorrelationTable:
    """11,985 rows pooled over the three subsets; statistic tau-c.

    ``refs``: ``"image-minus-human"`` removes every reference matching the image's position-0
    human candidate (lower-cased, non-alphanumerics deleted) for all 3 rows of the image;
    ``"all5"`` keeps all 5; ``"per-row"`` removes matches of each row's own candidate only.
    """
    reject_unknown("composite", options)
    check_options("composite", "refs", refs, tuple(REFS))
    records = _read_records(need(root, JSONL, "composite"))
    ref_sources = {s: references_for(root, s, "composite") for s in {r[1] for r in records} - {"flickr8k"}}
    human_key = _human_keys(records)

    cands, all_refs, human, groups, subsets, positions, images = [], [], [], [], [], [], []
    seen: dict[tuple[str, str, int], int] = {}
    for lineno, subset, image, pos, cand, score, refs8k in records:
        where = f"{JSONL} line {lineno} ({subset} {image} position {pos})"
        if subset not in _SUBSET_REFS:
            raise InputError(f"{where}: unknown subset {subset!r}")
        if (subset, image, pos) in seen:
            raise InputError(f"{where}: duplicate of line {seen[(subset, image, pos)]}")
        seen[(subset, image, pos)] = lineno
        base = _row_references(where, refs, subset, image, cand, refs8k, ref_sources, human_key)
        cands.append(ws(cand))
        all_refs.append([ws(r) for r in base])
        human.append(float(score))
        groups.append(f"{subset}/{image}")
        subsets.append(subset)
        positions.append(pos)
        images.append(image)  # the original file name: Flickr8k, <id>.jpg (Flickr30k) or COCO_val2014_…
    return CorrelationTable(
        name="composite",
        candidates=cands,
        references=all_refs,
        human=np.asarray(human, dtype=float),
        groups=groups,
        statistic="kendall_tau_c",
        protocol={
            "dataset": "composite",
            "rows": str(len(cands)),
            "refs": REFS[refs],
            "score": "correctness-inferred",
            "text": "umic-decoded-lowercase",
        },
        extra={"subset": subsets, "position": np.asarray(positions, dtype=int)},
        images=images,
    )


def _read_records(path: Path) -> list[tuple]:
    """(line number, subset, image, position, candidate, score, Flickr8k references) per record."""
    records = []
    for i, line in enumerate(read_text(path).split("\n")):
        if not line.strip():
            continue
        where = f"{JSONL} line {i + 1}"
        try:
            rec = json.loads(line)
            records.append((i + 1, rec["subset"], id_text(rec["image"], "image", where),
                            json_int(rec["position"], "position", where), rec["candidate"],
                            json_number(rec["score"], "score", where), rec.get("refs_flickr8k")))
        except (ValueError, KeyError, TypeError) as exc:  # InputError is a ValueError: keep its text
            raise InputError(str(exc) if isinstance(exc, InputError) else f"{where}: bad record ({exc})") from None
    return records


def _human_keys(records) -> dict[tuple[str, str], str]:
    """The loose key of each image's position-0 (human) candidate."""
    human_key: dict[tuple[str, str], str] = {}
    for lineno, subset, image, pos, cand, *_ in records:
        if pos == 0:
            if (subset, image) in human_key:
                raise InputError(f"{JSONL} line {lineno}: duplicate position-0 candidate for {subset} image {image}")
            human_key[(subset, image)] = loose_key(cand)
    return human_key


def _row_references(where: str, refs: str, subset: str, image: str, cand: str, refs8k, ref_sources,
                    human_key) -> list[str]:
    """One row's references under the ``refs`` rule (see :func:`load_composite`)."""
    if subset == "flickr8k":
        if not refs8k:
            raise InputError(f"{where}: flickr8k record without refs_flickr8k")
        base = list(refs8k)
    else:
        try:
            base = list(ref_sources[subset][image])
        except KeyError:
            raise InputError(f"{where}: image not in the Karpathy-test image list") from None
    if refs == "image-minus-human":
        if (subset, image) not in human_key:
            raise InputError(f"{where}: image has no position-0 human candidate")
        drop = human_key[(subset, image)]
        base = [r for r in base if loose_key(r) != drop]
    elif refs == "per-row":
        drop = loose_key(cand)
        base = [r for r in base if loose_key(r) != drop]
    if not base:
        raise InputError(f"{where}: no references left after removal")
    return base
