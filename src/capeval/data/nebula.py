"""Nebula (Matsuda et al., DENEB, ACCV 2024), test split as redistributed by EXPERT
(hjkim811/EXPERT ``annotations/nebula_test.json``): a JSON list of ``{imgid, mt, refs,
score}``, one candidate caption per item. The number of references varies (5, 6 or 10) and
is kept as released, as DENEB, EXPERT and Pearl evaluate it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ._common import reject_unknown
from ._pinned import checked_file, data_tag, read_json, scored_items
from .records import CorrelationTable

FOLDER = "nebula"
TEST = "nebula_test.json"


def load_nebula(root: Path, **options) -> CorrelationTable:
    """The Nebula test split; statistic Kendall τc."""
    reject_unknown("nebula", options)
    tags: dict[str, str] = {}
    path = checked_file(root, FOLDER, TEST, "nebula", tags)
    items = scored_items(read_json(path, f"{FOLDER}/{TEST}"), f"{FOLDER}/{TEST}", with_refs=True)
    return CorrelationTable(
        name="nebula",
        candidates=[it["mt"] for it in items],
        references=[it["refs"] for it in items],
        human=np.array([it["score"] for it in items], dtype=float),
        groups=[it["imgid"] for it in items],
        statistic="kendall_tau_c",
        protocol={"dataset": "nebula", "split": "test", "rows": str(len(items)), "refs": "as-released",
                  "text": "as-released", "source": "expert-json", **data_tag(tags)},
        images=[it["image"] for it in items],
    )
