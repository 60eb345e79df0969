"""ABSTRACT-50S (Vedantam et al. 2015): 400 pairs with 48 reference triplets each
(DATA.md §4, PROTOCOLS.md §14.6)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError
from ._common import TIES, check_options, load_mat, majority_labels, need, reject_unknown, ws
from .records import PairwiseTable

CONSENSUS_MAT = "abstract50s/consensus_abstract.mat"
N_HC = 200  # unverified convention from related code: first 200 pairs are HC


def load_abstract50s(root: Path, ties: str = "random", seed: int = 42, **options) -> PairwiseTable:
    """One row per (B, C) pair in order of first appearance; a = B, b = C; references = the
    pair's 48 A sentences; label = majority of the ±1 ratings (+1 read as B, by analogy with
    the PASCAL consensus loader: unverified). The 12 tied pairs follow ``ties``
    (``"random"`` with ``seed`` as PASCAL's published protocol does, ``"keep"`` → 0.5,
    ``"drop"``); ``extra["tied_pairs"]`` lists them either way."""
    reject_unknown("abstract50s", options)
    check_options("abstract50s", "ties", ties, TIES)
    mat = load_mat(need(root, CONSENSUS_MAT, "abstract50s"))
    order: dict[tuple[str, str], int] = {}
    refs: list[list[str]] = []
    margin: list[float] = []
    for i, t in enumerate(np.atleast_1d(mat["triplets"])):
        rating = float(t.rating)
        if rating not in (1.0, -1.0):
            raise InputError(f"{CONSENSUS_MAT}: triplet {i} has rating {t.rating!r}, expected ±1")
        key = (ws(str(t.B)), ws(str(t.C)))
        j = order.setdefault(key, len(order))
        if j == len(refs):
            refs.append([])
            margin.append(0.0)
        refs[j].append(ws(str(t.A)))
        margin[j] += rating
    pairs = list(order)
    labels, tied = majority_labels(margin, ties, seed)
    keep = np.flatnonzero(~np.isnan(labels))
    cats = ["HC" if j < N_HC else "HI" for j in range(len(pairs))]
    return PairwiseTable(
        name="abstract50s",
        candidates_a=[pairs[j][0] for j in keep],
        candidates_b=[pairs[j][1] for j in keep],
        references=[refs[j] for j in keep],
        labels=labels[keep],
        categories=[cats[j] for j in keep],
        protocol={"dataset": "abstract50s", "rows": str(len(keep)), "labels": "consensus-majority-48",
                  "polarity": "plus1-is-b-sentence-unverified", "ties": f"{ties}:{tied.size}",
                  "seed": str(seed), "categories": "first200-HC-unverified", "text": "ws-normalised"},
        extra={"pair_index": keep, "tied_pairs": tied.tolist(),
               "n_votes": np.array([len(refs[j]) for j in keep])},
    )
