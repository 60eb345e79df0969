"""Flickr8k-Expert and Flickr8k-CF (Hodosh et al. 2013) in the CLIPScore protocols
(docs/DATA_FORMATS.md, Flickr8k-Expert and Flickr8k-CF)."""
from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np

from ..errors import InputError
from ._common import (check_options, flickr8k_captions, json_number, need, read_json, read_lines, read_text,
                      reject_unknown, ws)
from .records import CorrelationTable

EXPERT_JSON = "flickr8k/clipscore_format_EXPERT/flickr8k.json"
EXPERT_RAW = "flickr8k/Flickr8k_text/ExpertAnnotations.txt"
CF_RAW = "flickr8k/Flickr8k_text/CrowdFlowerAnnotations.txt"
EK_DIR = "flickr8k/elliott_keller_2014"


def _bare(image: str) -> str:
    return image[:-4] if image.endswith(".jpg") else image


def _rating(value: str, where: str) -> float:
    try:
        f = float(value)
    except ValueError:
        raise InputError(f"{where}: rating {value!r} is not a number") from None
    if math.isnan(f):
        raise InputError(f"{where}: rating is NaN")
    return f


def _check_duplicate(seen: dict, key: tuple, lineno: int, where: str) -> None:
    if key in seen:
        raise InputError(f"{where}: duplicate judgement of {key[1]} for {key[0]} (first at line {seen[key]})")
    seen[key] = lineno


def _split_tsv(line: str, n: int, where: str) -> list[str]:
    parts = line.strip().split("\t")
    if len(parts) != n:
        raise InputError(f"{where}: expected {n} tab-separated fields, got {len(parts)}: {line[:80]!r}")
    return parts


def load_expert(root: Path, protocol: str = "clipscore", rebuild_from_raw: bool = False, **options) -> CorrelationTable:
    """16,992 rows (3 experts x 5,664 pairs, self-captions dropped), tau-c; or
    ``protocol="elliott-keller"``: all 5,822 pairs x 3 judges stacked, Spearman."""
    reject_unknown("flickr8k-expert", options)
    check_options("flickr8k-expert", "protocol", protocol, ("clipscore", "elliott-keller"))
    if protocol == "elliott-keller":
        return _elliott_keller(root)
    rows = _expert_from_raw(root) if rebuild_from_raw else _expert_from_json(root)
    return _expert_table(rows, "kendall_tau_c", drop="self-caption", text="ws-normalised",
                         source="raw-annotations" if rebuild_from_raw else "clipscore-json")


def _expert_table(rows, statistic: str, *, drop: str, text: str, source: str) -> CorrelationTable:
    """Flickr8k-Expert's table of ``(candidates, references, ratings, groups, images)``: every
    image's five captions as references, the three experts' ratings stacked."""
    cands, refs, human, groups, images = rows
    return CorrelationTable(
        name="flickr8k-expert",
        candidates=cands,
        references=refs,
        human=np.asarray(human, dtype=float),
        groups=groups,
        statistic=statistic,
        protocol={"dataset": "flickr8k-expert", "rows": str(len(cands)), "refs": "image-all5", "drop": drop,
                  "judges": "stacked", "text": text, "source": source},
        images=images,
    )


def _expert_from_json(root: Path):
    data = read_json(need(root, EXPERT_JSON, "flickr8k-expert"), "flickr8k-expert")
    cands, refs, human, groups, images = [], [], [], [], []
    for image_id, entry in data.items():
        gt = [ws(r) for r in entry["ground_truth"]]
        # image_path is "Flickr8k_Dataset/<id>.jpg"; the file name is what a user's directory holds
        image = Path(entry.get("image_path") or f"{image_id}.jpg").name
        for k, judgement in enumerate(entry["human_judgement"]):
            where = f"{EXPERT_JSON}: image {image_id} judgement {k}"
            rating = judgement.get("rating")
            if rating is None or (isinstance(rating, float) and math.isnan(rating)):
                raise InputError(f"{where}: rating is missing or NaN")
            cands.append(ws(judgement["caption"]))
            refs.append(gt)
            human.append(json_number(rating, "rating", where))
            groups.append(image_id)
            images.append(image)
    return cands, refs, human, groups, images


def _expert_from_raw(root: Path):
    """The clipscore download.py build: drop rows whose caption text is one of the judged
    image's own captions (158 rows), then one row per expert."""
    captions = flickr8k_captions(root, "flickr8k-expert")
    by_id = {f"{img}#{k}": c for img, caps in captions.items() for k, c in enumerate(caps)}
    cands, refs, human, groups, images = [], [], [], [], []
    path = need(root, EXPERT_RAW, "flickr8k-expert")
    seen: dict = {}
    for i, line in enumerate(read_lines(path)):
        where = f"{EXPERT_RAW} line {i + 1}"
        image, cap_id, *scores = _split_tsv(line, 5, where)
        _check_duplicate(seen, (image, cap_id), i + 1, where)
        if cap_id not in by_id or image not in captions:
            raise InputError(f"{where}: {cap_id if cap_id not in by_id else image} not in the token file")
        own = [c.strip() for c in captions[image]]
        caption = by_id[cap_id].strip()
        if caption in own:
            continue
        gt = [ws(c) for c in own]
        for s in scores:
            cands.append(ws(caption))
            refs.append(gt)
            human.append(_rating(s, where))
            groups.append(_bare(image))
            images.append(image)
    return cands, refs, human, groups, images


def _elliott_keller(root: Path) -> CorrelationTable:
    """Elliott & Keller (2014): their line-aligned repackaging, nothing dropped."""
    base = need(root, EK_DIR, "flickr8k-expert")
    judgements = list(csv.DictReader(io.StringIO(read_text(base / "judgements"), newline="")))
    cand_lines = read_lines(base / "candidates")
    ref_lines = [read_lines(base / f"ref-{k}") for k in range(5)]
    n = len(judgements)
    for what, lines in [("candidates", cand_lines)] + [(f"ref-{k}", r) for k, r in enumerate(ref_lines)]:
        if len(lines) != n:
            raise InputError(f"{EK_DIR}/{what} has {len(lines)} lines for {n} judgements; files must align")
    cands, refs, human, groups, images = [], [], [], [], []
    for i, row in enumerate(judgements):
        rr = [ws(r[i]) for r in ref_lines]
        for j in ("j1", "j2", "j3"):
            cands.append(ws(cand_lines[i]))
            refs.append(rr)
            human.append(_rating(row[j], f"{EK_DIR}/judgements row {i + 1} {j}"))
            groups.append(_bare(row["imageid"]))
            images.append(row["imageid"])
    return _expert_table((cands, refs, human, groups, images), "spearman", drop="none", text="elliott-keller-detok",
                         source="elliott-keller-2014")


def load_cf(root: Path, rating: str = "file", **options) -> CorrelationTable:
    """47,830 rows; references = the image's captions minus every CF candidate of that image
    (clipscore mutates one list per image, so the removal applies to all its rows); tau-b.

    ``rating="file"`` takes the file's fraction column, as clipscore does; ``"counts"``
    recomputes #yes/(#yes+#no) (equal to < 1e-5 in every row)."""
    reject_unknown("flickr8k-cf", options)
    check_options("flickr8k-cf", "rating", rating, ("file", "counts"))
    captions = flickr8k_captions(root, "flickr8k-cf")
    by_id = {f"{img}#{k}": c.strip() for img, caps in captions.items() for k, c in enumerate(caps)}
    path = need(root, CF_RAW, "flickr8k-cf")
    rows = []
    image_refs: dict[str, list[str]] = {}
    seen: dict = {}
    for i, line in enumerate(read_lines(path)):
        where = f"{CF_RAW} line {i + 1}"
        image, cap_id, frac, n_yes, n_no = _split_tsv(line, 5, where)
        _check_duplicate(seen, (image, cap_id), i + 1, where)
        if cap_id not in by_id or image not in captions:
            raise InputError(f"{where}: {cap_id if cap_id not in by_id else image} not in the token file")
        try:
            yes, no = int(n_yes), int(n_no)
        except ValueError:
            raise InputError(f"{where}: counts {n_yes!r}, {n_no!r} are not integers") from None
        if yes + no == 0:
            raise InputError(f"{where}: no judgements (#yes = #no = 0)")
        value = _rating(frac, where) if rating == "file" else yes / (yes + no)
        caption = by_id[cap_id]
        refs = image_refs.setdefault(image, [c.strip() for c in captions[image]])
        if caption in refs:
            refs.remove(caption)
        rows.append((image, caption, value, yes + no))
    for image, refs in image_refs.items():
        if not refs:
            raise InputError(f"flickr8k-cf: image {image} has no references left after removing its candidates")
    norm_refs = {img: [ws(r) for r in refs] for img, refs in image_refs.items()}
    return CorrelationTable(
        name="flickr8k-cf",
        candidates=[ws(c) for _, c, _, _ in rows],
        references=[norm_refs[img] for img, _, _, _ in rows],
        human=np.array([v for _, _, v, _ in rows], dtype=float),
        groups=[_bare(img) for img, _, _, _ in rows],
        statistic="kendall_tau_b",
        protocol={
            "dataset": "flickr8k-cf",
            "rows": str(len(rows)),
            "refs": "image-minus-cf-candidates",
            "rating": "yes-fraction-file" if rating == "file" else "yes-fraction-counts",
            "text": "ws-normalised",
        },
        extra={"n_judgements": np.array([n for *_, n in rows], dtype=int)},
        images=[img for img, _, _, _ in rows],
    )
