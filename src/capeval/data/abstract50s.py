"""ABSTRACT-50S (Vedantam et al. 2015): 400 pairs with 48 reference triplets each
(docs/DATA_FORMATS.md, ABSTRACT-50S)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError
from ._common import TIES, check_options, load_mat, majority_labels, mat_cells, mat_text, need, reject_unknown, ws
from .abstract50s_categories import derive_categories, summary
from .records import PairwiseTable

CONSENSUS_MAT = "abstract50s/consensus_abstract.mat"
SCENES_MAT = "abstract50s/abstract50S.mat"


def _scene_of_pairs(root: Path, refs: list[list[str]]) -> tuple[list[int], list[str]]:
    """Index in ``abstract50S.mat`` of the scene whose 48 sentences are each pair's references,
    and every scene's image file name (the last part of its URL, e.g. ``Scene898_0.png``)."""
    mat = load_mat(need(root, SCENES_MAT, "abstract50s"))
    by_sentences: dict[tuple[str, ...], int] = {}
    names: list[str] = []
    for i, scene in enumerate(np.atleast_1d(mat["abs_sent"])):
        by_sentences.setdefault(tuple(sorted(ws(mat_text(x)) for x in mat_cells(scene.sentences))), i)
        names.append(mat_text(scene.name).rsplit("/", 1)[-1])
    out = []
    for j, r in enumerate(refs):
        key = tuple(sorted(r))
        if key not in by_sentences:
            raise InputError(f"{CONSENSUS_MAT}: the references of pair {j} are no scene of {SCENES_MAT}")
        out.append(by_sentences[key])
    return out, names


def load_abstract50s(root: Path, ties: str = "random", seed: int = 42, **options) -> PairwiseTable:
    """One row per (B, C) pair in order of first appearance; a = B, b = C; references = the
    pair's 48 A sentences (one scene of ``abstract50S.mat``); label = majority of the ±1
    ratings (+1 = B: in HI pairs the target scene's own caption wins 95% of the time under this
    reading). The 12 tied pairs follow ``ties`` (``"random"`` with ``seed`` as PASCAL's
    published protocol does, ``"keep"`` → 0.5, ``"drop"``); ``extra["tied_pairs"]`` lists them
    either way. Categories (HC / HI / undetermined) are derived from which scene each candidate
    belongs to, see :mod:`capeval.data.abstract50s_categories`."""
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
        key = (ws(mat_text(t.B)), ws(mat_text(t.C)))
        j = order.setdefault(key, len(order))
        if j == len(refs):
            refs.append([])
            margin.append(0.0)
        refs[j].append(ws(mat_text(t.A)))
        margin[j] += rating
    pairs = list(order)
    scenes, scene_names = _scene_of_pairs(root, refs)
    cats, evidence = derive_categories(pairs, scenes)
    labels, tied = majority_labels(margin, ties, seed)
    keep = np.flatnonzero(~np.isnan(labels))
    return PairwiseTable(
        name="abstract50s",
        candidates_a=[pairs[j][0] for j in keep],
        candidates_b=[pairs[j][1] for j in keep],
        references=[refs[j] for j in keep],
        labels=labels[keep],
        categories=[cats[j] for j in keep],
        protocol={"dataset": "abstract50s", "rows": str(len(keep)), "labels": "consensus-majority-48",
                  "polarity": "plus1-is-b-sentence", "ties": f"{ties}:{tied.size}",
                  "seed": str(seed), "categories": f"scene-membership:{summary(cats)}",
                  "text": "ws-normalised"},
        extra={"pair_index": keep, "tied_pairs": tied.tolist(),
               "n_votes": np.array([len(refs[j]) for j in keep]),
               "scene": np.array([scenes[j] for j in keep]),
               "category_evidence": [evidence[j] for j in keep]},
        images=[scene_names[scenes[j]] for j in keep],
    )
