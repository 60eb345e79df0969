"""Polaris (Wada et al., CVPR 2024, Polos).

Two releases are read:

* the Hugging Face CSVs ``polaris/polaris_{train,val,test}.csv`` (yuwd/Polaris), with the
  columns Polos's own evaluation reads: ``mt`` (candidate), ``refs`` (a Python list literal
  of references), ``score`` (human score) and ``imgid`` (the image file name); other
  columns are ignored. capeval has no pinned checksum for them yet, so each table records
  the file's digest in its protocol (``files: polaris_test.csv=unpinned-<sha12>``);
* ``polaris/polaris_exp_val.json`` from hjkim811/EXPERT ``exp_datasets/``: ``{id, imgid,
  mt, score, count, explanation}``, **no references**. The table has ``references=None``
  (protocol ``refs: none``) and only reference-free metrics run on it.
"""
from __future__ import annotations

import ast
import csv
import io
from pathlib import Path

import numpy as np

from ..errors import InputError
from ._common import check_options, read_text, reject_unknown
from ._pinned import checked_file, data_tag, image_name, read_json, reference_list, score_field, scored_items
from .records import CorrelationTable

FOLDER = "polaris"
EXP_VAL = "polaris_exp_val.json"
SPLITS = ("test", "val", "train", "exp-val")
COLUMNS = ("mt", "refs", "score", "imgid")


def load_polaris(root: Path, split: str = "test", **options) -> CorrelationTable:
    """One Polaris split; statistic Kendall τc. ``split``: ``"test"`` (default, the split the
    papers report), ``"val"``, ``"train"`` or ``"exp-val"`` (EXPERT's validation split,
    without references)."""
    reject_unknown("polaris", options)
    check_options("polaris", "split", split, SPLITS)
    tags: dict[str, str] = {}
    if split == "exp-val":
        path = checked_file(root, FOLDER, EXP_VAL, "polaris", tags)
        items = scored_items(read_json(path, f"{FOLDER}/{EXP_VAL}"), f"{FOLDER}/{EXP_VAL}", with_refs=False)
        refs, source, ref_rule = None, "expert-exp-json", "none"
    else:
        rel = f"polaris_{split}.csv"
        path = checked_file(root, FOLDER, rel, "polaris", tags)
        items = _csv_items(path, f"{FOLDER}/{rel}")
        refs, source, ref_rule = [it["refs"] for it in items], "hf-csv", "as-released"
    return CorrelationTable(
        name="polaris",
        candidates=[it["mt"] for it in items],
        references=refs,
        human=np.array([it["score"] for it in items], dtype=float),
        groups=[it["imgid"] for it in items],
        statistic="kendall_tau_c",
        protocol={"dataset": "polaris", "split": split, "rows": str(len(items)), "refs": ref_rule,
                  "text": "as-released", "source": source, **data_tag(tags)},
        images=[it["image"] for it in items],
    )


def _csv_items(path: Path, rel: str) -> list[dict]:
    text = read_text(path)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"{rel}: no column {missing[0]!r} (header: {reader.fieldnames}); "
                         f"expected {', '.join(COLUMNS)}")
    out = []
    for rec in reader:
        # line_num counts physical lines, so quoted captions spanning lines still name the right one
        where = f"{rel} record ending at line {reader.line_num}"
        if None in rec:
            raise InputError(f"{where}: more fields than the header has")
        try:
            refs = ast.literal_eval(rec["refs"] or "")
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise InputError(f"{where}: refs {rec['refs']!r:.80} is not a list literal") from None
        out.append({"mt": rec["mt"], "refs": reference_list(refs, where), "score": score_field(rec, "score", where),
                    "imgid": rec["imgid"], "image": image_name(rec["imgid"], where)})
        if not (rec["mt"] or "").strip():
            raise InputError(f"{where}: empty candidate (mt)")
    if not out:
        raise InputError(f"{rel}: no rows")
    return out
