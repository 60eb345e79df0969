"""PASCAL-50S (Vedantam et al. 2015): 4,000 caption pairs, HC/HI/HM/MM
(docs/DATA_FORMATS.md, PASCAL-50S).

``consensus_pascal.mat`` (the 48-vote labels of the published tables) is not available, so
the default labels come from the EXPERT-processed file; the alternative is the majority of
the 10-11 votes in ``pair_pascal.mat``, as CLIPScore v1/v2 used (not comparable with the
revised tables).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError
from ._common import (TIES, check_options, id_text, load_mat, majority_labels, mat_cells, mat_text, need, read_json,
                      reject_unknown, ws)
from .records import PairwiseTable

EXPERT_JSON = "pascal50s/EXPERT_processed/pascal_50s.json"
PAIRS_MAT = "pascal50s/vrama91_cider-matlab/pair_pascal.mat"
REFS_MAT = "pascal50s/vrama91_cider-matlab/pascal50S.mat"
CATEGORIES = ("HC", "HI", "HM", "MM")  # pair_pascal.mat codes 1..4


def load_pascal50s(root: Path, labels: str = "expert-json", k: int | str = 5, seed: int = 42,
                   ties: str = "random", **options) -> PairwiseTable:
    """``labels="expert-json"`` (default): EXPERT labels with their 5 references.
    ``labels="pair-majority"``: majority of pair_pascal.mat votes (+1 → sentence 1 = a),
    with ``k`` references (an int, or ``"all"`` for 50) drawn per pair from pascal50S.mat
    with ``numpy.random.default_rng(seed)``; ``ties`` applies to tied vote counts."""
    reject_unknown("pascal50s", options)
    check_options("pascal50s", "labels", labels, ("expert-json", "pair-majority"))
    if labels == "expert-json":
        return _from_expert(root)
    check_options("pascal50s", "ties", ties, TIES)
    # `capeval bench -D k=5 -D seed=1` hands the loader strings
    k = _as_int(k, "k") if k != "all" else k
    return _from_pairs(root, k, _as_int(seed, "seed"), ties)


def _as_int(value, name: str):
    """An integer option given as int or as its decimal string; anything else is returned as is
    (the caller's check names it)."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    if isinstance(value, str) and name == "seed":
        raise InputError(f"pascal50s: seed={value!r} must be an integer")
    return value


def _from_expert(root: Path) -> PairwiseTable:
    data = read_json(need(root, EXPERT_JSON, "pascal50s"), "pascal50s")
    missing = [c for c in CATEGORIES if c not in data]
    if missing:
        raise InputError(f"{EXPERT_JSON}: categories {missing} missing")
    a, b, refs, labels, cats, images = [], [], [], [], [], []
    for cat in CATEGORIES:
        for i, item in enumerate(data[cat]):
            where = f"{EXPERT_JSON} {cat}[{i}] ({item.get('image')})"
            if len(item.get("captions", ())) != 2:
                raise InputError(f"{where}: expected 2 captions")
            label = item.get("label")
            if isinstance(label, bool) or label not in (0, 1):  # True == 1 in Python, not in the file
                raise InputError(f"{where}: label {label!r} is not 0 or 1")
            a.append(ws(item["captions"][0]))
            b.append(ws(item["captions"][1]))
            refs.append([ws(r) for r in item["references"]])
            labels.append(float(item["label"]))
            cats.append(cat)
            images.append(Path(id_text(item["image"], "image", where)).name)
    return PairwiseTable(
        name="pascal50s", candidates_a=a, candidates_b=b, references=refs,
        labels=np.asarray(labels), categories=cats,
        protocol={"dataset": "pascal50s", "rows": str(len(a)), "labels": "expert-json",
                  "refs": "expert-json", "nrefs": "5", "text": "ws-normalised"},
        extra={"image": images, "candidate_in_refs": _cand_in_refs(a, b, refs)},
        images=images,
    )


def _from_pairs(root: Path, k, seed: int, ties: str) -> PairwiseTable:
    pairs = load_mat(need(root, PAIRS_MAT, "pascal50s"))
    ref_mat = load_mat(need(root, REFS_MAT, "pascal50s"))
    pool = {}
    for r in np.atleast_1d(ref_mat["refs"]):
        pool[mat_text(r.image)] = [ws(mat_text(s)) for s in mat_cells(r.sent)]
    inputs = np.atleast_1d(pairs["new_input"])
    codes = np.atleast_1d(pairs["category"]).astype(int)
    votes = [np.atleast_1d(np.asarray(v.result if hasattr(v, "result") else v, dtype=float)).ravel()
             for v in np.atleast_1d(pairs["result"])]
    if not (len(inputs) == len(codes) == len(votes)):
        raise InputError(f"{PAIRS_MAT}: new_input, category and result lengths differ")
    if k != "all" and (not isinstance(k, int) or k < 1):
        raise InputError(f"pascal50s: k={k!r} must be a positive int or 'all'")
    rng = np.random.default_rng(seed)
    a, b, refs, cats, images = [], [], [], [], []
    for i, (inp, code) in enumerate(zip(inputs, codes)):
        where = f"{PAIRS_MAT} pair {i} ({inp.name})"
        if code not in (1, 2, 3, 4):
            raise InputError(f"{where}: category code {code} not in 1..4")
        if mat_text(inp.name) not in pool:
            raise InputError(f"{where}: image has no references in {REFS_MAT}")
        # pair_pascal.mat sentences carry a leading space (docs/DATA_FORMATS.md, PASCAL-50S)
        a.append(ws(mat_text(inp.sent1)))
        b.append(ws(mat_text(inp.sent2)))
        full = pool[mat_text(inp.name)]
        if k == "all":
            refs.append(list(full))
        else:
            if k > len(full):
                raise InputError(f"{where}: k={k} but the image has {len(full)} references")
            refs.append([full[j] for j in rng.choice(len(full), size=k, replace=False)])
        cats.append(CATEGORIES[code - 1])
        images.append(mat_text(inp.name))
    margin = np.array([v.sum() for v in votes])
    labels, tied = majority_labels(margin, ties, seed)
    keep = np.flatnonzero(~np.isnan(labels))
    sel = lambda xs: [xs[j] for j in keep]  # noqa: E731
    return PairwiseTable(
        name="pascal50s", candidates_a=sel(a), candidates_b=sel(b), references=sel(refs),
        labels=labels[keep], categories=sel(cats),
        protocol={"dataset": "pascal50s", "rows": str(len(keep)), "labels": "pair-majority",
                  "refs": f"pascal50S-sample-{k}-per-pair" if k != "all" else "pascal50S-all",
                  "nrefs": str(k if k != "all" else "var"), "seed": str(seed),
                  "ties": f"{ties}:{tied.size}", "text": "ws-normalised"},
        extra={"image": sel(images), "n_votes": np.array([len(v) for v in votes])[keep],
               "tied_pairs": tied.tolist(), "candidate_in_refs": _cand_in_refs(sel(a), sel(b), sel(refs))},
        images=sel(images),
    )


def _cand_in_refs(a, b, refs) -> np.ndarray:
    """Pairs where a candidate is one of the references; published protocols keep them."""
    return np.array([x in r or y in r for x, y, r in zip(a, b, refs)], dtype=bool)
