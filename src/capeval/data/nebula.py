"""Nebula (Matsuda et al., DENEB, ACCV 2024).

Two releases are read:

* EXPERT's copy of the test split (hjkim811/EXPERT ``annotations/nebula_test.json``, pinned):
  a JSON list of ``{imgid, mt, refs, score}``, one candidate caption per item; the image file
  is ``<imgid>.jpg``, as EXPERT's code opens it;
* the Hugging Face release ``Ka2ukiMatsuda/Nebula`` (``-D source=hf``): Parquet shards
  ``nebula/data/{train,valid,test}-*.parquet`` as the dataset card lays them out, with the
  features ``file_name``, ``image``, ``refs``, ``mt`` and ``human_score``. Only the text
  columns are read (the embedded images are not decoded). capeval has no pinned checksums for
  the shards, so each one's digest goes into the protocol.

The number of references varies (5, 6 or 10) and is kept as released, as DENEB, EXPERT and
Pearl evaluate it. Statistic: Kendall τc.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError, ResourceNotFound
from ._common import check_options, reject_unknown
from ._pinned import checked_file, data_tag, image_name, read_json, reference_list, score_field, scored_items
from .records import CorrelationTable

FOLDER = "nebula"
TEST = "nebula_test.json"
SOURCES = ("expert-json", "hf")
HF_SPLITS = ("test", "valid", "train")
HF_COLUMNS = ("file_name", "refs", "mt", "human_score")


def load_nebula(root: Path, source: str = "expert-json", split: str = "test", **options) -> CorrelationTable:
    """The Nebula test split from EXPERT's JSON (default), or a split of the Hugging Face
    release (``source="hf"``, ``split="test"|"valid"|"train"``); statistic Kendall τc."""
    reject_unknown("nebula", options)
    check_options("nebula", "source", source, SOURCES)
    check_options("nebula", "split", split, HF_SPLITS if source == "hf" else ("test",))
    tags: dict[str, str] = {}
    if source == "hf":
        items = _hf_items(root, split, tags)
    else:
        path = checked_file(root, FOLDER, TEST, "nebula", tags)
        items = scored_items(read_json(path, f"{FOLDER}/{TEST}"), f"{FOLDER}/{TEST}", with_refs=True)
    return CorrelationTable(
        name="nebula",
        candidates=[it["mt"] for it in items],
        references=[it["refs"] for it in items],
        human=np.array([it["score"] for it in items], dtype=float),
        groups=[it["imgid"] for it in items],
        statistic="kendall_tau_c",
        protocol={"dataset": "nebula", "split": split, "rows": str(len(items)), "refs": "as-released",
                  "text": "as-released", "source": source, **data_tag(tags)},
        images=[it["image"] for it in items],
    )


def _hf_items(root: Path, split: str, tags: dict[str, str]) -> list[dict]:
    shards = sorted((root / FOLDER / "data").glob(f"{split}-*.parquet"))
    if not shards:
        raise ResourceNotFound(f"nebula: no {FOLDER}/data/{split}-*.parquet under {root}; place the data/ folder "
                               "of the Hugging Face release Ka2ukiMatsuda/Nebula there")
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ResourceNotFound("nebula: reading the Hugging Face release (Parquet) needs pyarrow: "
                               "pip install pyarrow (it comes with capeval's coco, semantic and ray extras)") from None
    items = []
    for shard in shards:
        rel = shard.relative_to(root / FOLDER).as_posix()
        checked_file(root, FOLDER, rel, "nebula", tags)
        try:
            table = pq.read_table(shard, columns=list(HF_COLUMNS))
        except Exception as exc:  # noqa: BLE001 - pyarrow raises its own errors and KeyError for a missing column
            raise InputError(f"{FOLDER}/{rel}: not a Parquet file with the columns {', '.join(HF_COLUMNS)} "
                             f"({type(exc).__name__}: {exc})") from None
        for i, rec in enumerate(table.to_pylist()):
            where = f"{FOLDER}/{rel} row {i}"
            if not isinstance(rec["mt"], str):
                raise InputError(f"{where}: mt is {type(rec['mt']).__name__}, not text")
            fname = rec["file_name"]
            name = image_name(fname.replace("\\", "/").rsplit("/", 1)[-1] if isinstance(fname, str) else fname, where)
            items.append({"imgid": name.rsplit(".", 1)[0], "image": name, "mt": rec["mt"],
                          "refs": reference_list(rec["refs"], where), "score": score_field(rec, "human_score", where)})
    return items
