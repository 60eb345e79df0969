"""Reference-set policies: keep a learned model's features inside the reference count it saw.

NNEval-style features (BLEU, METEOR, WMD-max, SPICE's merged graph) grow with the number of
references, so a model trained on 4 references per candidate sees out-of-range inputs on a
benchmark with 48 (ABSTRACT-50S). A policy turns each candidate's reference list into one or
more *units* of at most ``k`` references; features are computed per unit and averaged back
per candidate:

- ``all``: the references as given (the paper's use; one unit).
- ``cap``: the ``k`` references with the smallest sha256 of their text (one unit). The choice
  depends only on the texts, not on their order or on the other rows.
- ``groups``: disjoint groups of ``k`` references in sha256 order, ⌊K/k⌋ groups (the K mod k
  left-over references are dropped so every group has exactly ``k``), features averaged over
  the groups. With K ≤ k there is one group holding all references.
- ``per-ref``: each reference alone, features averaged over the references: a feature whose
  expected value does not depend on the reference count (the model must be trained this way).

Inside a unit the selected references keep their input order, so a candidate with K ≤ k
references gives exactly the same unit under ``all``, ``cap`` and ``groups`` (and the same
cached scores).
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

POLICIES = ("all", "cap", "groups", "per-ref")
DEFAULT_K = 4  # references per training candidate (capeval.learn.builder)


def _hash_order(refs: Sequence[str]) -> list[int]:
    """Indices of ``refs`` by sha256 of the text (ties, i.e. duplicate texts, by position)."""
    return sorted(range(len(refs)), key=lambda i: (hashlib.sha256(refs[i].encode("utf-8")).hexdigest(), i))


def unit_refsets(refs: Sequence[str], policy: str, k: int = DEFAULT_K) -> list[list[str]]:
    """The reference lists of one candidate's units under ``policy``."""
    if policy not in POLICIES:
        raise InputError(f"unknown reference policy {policy!r}; one of {', '.join(POLICIES)}")
    if k < 1:
        raise InputError(f"reference policy {policy!r} needs k >= 1, got {k}")
    refs = list(refs)
    if policy == "all" or (policy in ("cap", "groups") and len(refs) <= k):
        return [refs]
    if policy == "per-ref":
        return [[r] for r in refs]
    order = _hash_order(refs)
    n_groups = 1 if policy == "cap" else len(refs) // k
    return [[refs[i] for i in sorted(order[g * k:(g + 1) * k])] for g in range(n_groups)]


@dataclass(frozen=True)
class Expansion:
    """Units to score (candidate repeated per unit) and which candidate each unit belongs to."""

    candidates: list[str]
    references: list[list[str]]
    owner: np.ndarray  # unit -> candidate index
    n: int  # number of candidates

    def pool(self, X: np.ndarray) -> np.ndarray:
        """Mean of the unit rows of each candidate (units of one candidate are contiguous)."""
        X = np.asarray(X, dtype=float)
        if X.shape[0] != self.owner.shape[0]:
            raise InputError(f"{X.shape[0]} unit rows for {self.owner.shape[0]} units")
        if self.owner.shape[0] == self.n:  # one unit per candidate: no arithmetic, bit-exact
            return X
        counts = np.bincount(self.owner, minlength=self.n).astype(float)
        sums = np.zeros((self.n,) + X.shape[1:])
        np.add.at(sums, self.owner, X)
        return sums / counts.reshape((-1,) + (1,) * (X.ndim - 1))


def expand(candidates: Sequence[str], references: Sequence[Sequence[str]], policy: str = "all",
           k: int = DEFAULT_K) -> Expansion:
    cands: list[str] = []
    refs: list[list[str]] = []
    owner: list[int] = []
    for i, (c, rs) in enumerate(zip(candidates, references)):
        units = unit_refsets(rs, policy, k)
        if not units:
            raise InputError(f"candidate {i} ({c!r}) has no references; policy {policy!r} needs at least one")
        for unit in units:
            cands.append(c)
            refs.append(unit)
            owner.append(i)
    return Expansion(cands, refs, np.asarray(owner, dtype=np.int64), len(candidates))


def describe(policy: str, k: int = DEFAULT_K) -> str:
    """Signature value: ``all``, ``cap4-sha256``, ``groups4-sha256-mean``, ``per-ref-mean``."""
    if policy not in POLICIES:
        raise InputError(f"unknown reference policy {policy!r}; one of {', '.join(POLICIES)}")
    return {"all": "all", "cap": f"cap{k}-sha256", "groups": f"groups{k}-sha256-mean",
            "per-ref": "per-ref-mean"}[policy]
