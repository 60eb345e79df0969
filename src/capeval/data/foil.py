"""FOIL-COCO (Shekhar et al. 2017) — only the format samples are available
(docs/DATA_FORMATS.md, FOIL-COCO samples).

The protocol pairs each foil with its original through the annotation ``id``. In the
samples foils and originals never share an id, so pairs fall back to every
(original, foil) of the same image, and the protocol says which rule was used. References
should be the image's COCO captions minus the original; COCO captions are not provided, so
without ``coco_captions`` they are the image's *other* originals in the file, and pairs left
with none are dropped and counted.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError
from ._common import check_options, id_text, need, read_json, reject_unknown, ws
from .records import PairwiseTable

SAMPLES = {"test": "foil_sample_only/sample_foil_test2017.json", "train": "foil_sample_only/sample_foil_train2017.json"}


def _is_foil(ann: dict) -> bool:
    if "foil" in ann:  # the full release marks foils with a boolean
        return bool(ann["foil"])
    return ann.get("target_word") != "ORIG"


def load_foil_sample(root: Path, split: str = "test", nrefs: str = "all", coco_captions: str | Path | None = None,
                     file: str | Path | None = None, **options) -> PairwiseTable:
    """PairwiseTable with a = original, b = foil, label 0 (the original is correct).

    ``file`` reads another FOIL json (e.g. the full test file) instead of the sample;
    ``coco_captions`` (a COCO ``captions_val2014.json``) supplies the references; ``nrefs``:
    ``"all"`` (4-ref setting) or ``"1"`` (the first remaining reference)."""
    reject_unknown("foil-sample", options)
    check_options("foil-sample", "split", split, tuple(SAMPLES))
    check_options("foil-sample", "nrefs", str(nrefs), ("all", "1"))
    path = Path(file) if file is not None else need(root, SAMPLES[split], "foil-sample")
    data = read_json(path, "foil-sample")
    anns = data.get("annotations")
    if not isinstance(anns, list):
        raise InputError(f"{path}: no 'annotations' list")
    for i, a in enumerate(anns):
        for key in ("id", "image_id", "caption"):
            if key not in a:
                raise InputError(f"{path}: annotation {i} has no {key!r}")
        # ids are matched by their text: JSON may give one as 42 and another as "42"
        for key in ("id", "image_id"):
            id_text(a[key], key, f"{path}: annotation {i}")
    foil_ids = [str(a["foil_id"]) for a in anns if a.get("foil_id") is not None]
    if len(set(foil_ids)) != len(foil_ids):
        raise InputError(f"{path}: duplicate foil_id values")
    originals = [a for a in anns if not _is_foil(a)]
    foils = [a for a in anns if _is_foil(a)]
    orig_ids = {str(a["id"]) for a in originals}
    # The file's own image list names each file (val2014 for the test split, train2014 for train).
    file_names = {str(im.get("id")): im.get("file_name") for im in data.get("images") or [] if isinstance(im, dict)}
    by_id = any(str(f["id"]) in orig_ids for f in foils)

    coco: dict[str, list[str]] | None = None
    if coco_captions is not None:
        cc = read_json(Path(coco_captions), "foil-sample")
        coco = {}
        for a in cc["annotations"]:
            coco.setdefault(str(a["image_id"]), []).append(ws(a["caption"]))

    a_list, b_list, refs, cats, meta = [], [], [], [], []
    dropped = 0
    for f in foils:
        if by_id:
            partners = [o for o in originals if str(o["id"]) == str(f["id"])]
        else:
            partners = [o for o in originals if str(o["image_id"]) == str(f["image_id"])]
        for o in partners:
            orig = ws(o["caption"])
            pool = coco.get(str(o["image_id"]), []) if coco is not None else [
                ws(x["caption"]) for x in originals if str(x["image_id"]) == str(o["image_id"]) and x is not o]
            r = [x for x in pool if x != orig]
            if nrefs == "1":
                r = r[:1]
            if not r:
                dropped += 1
                continue
            a_list.append(orig)
            b_list.append(ws(f["caption"]))
            refs.append(r)
            cats.append("foil")
            meta.append((o["image_id"], o["id"], f.get("foil_id"), f.get("target_word"), f.get("foil_word")))
    return PairwiseTable(
        name="foil-sample",
        candidates_a=a_list, candidates_b=b_list, references=refs,
        labels=np.zeros(len(a_list)), categories=cats,
        protocol={
            "dataset": "foil-sample" if file is None else f"foil:{Path(file).name}",
            "rows": str(len(a_list)),
            "pairs": "id" if by_id else "image",
            "refs": ("coco-minus-original" if coco is not None else "sample-other-originals") + f"-{nrefs}",
            "text": "ws-normalised",
        },
        extra={"image_id": [m[0] for m in meta], "original_id": [m[1] for m in meta],
               "foil_id": [m[2] for m in meta], "target_word": [m[3] for m in meta],
               "foil_word": [m[4] for m in meta], "dropped_no_refs": dropped},
        images=[file_names.get(str(m[0])) or f"COCO_val2014_{int(m[0]):012d}.jpg" for m in meta],
    )
