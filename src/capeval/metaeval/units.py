"""The units a benchmark scores, with stable ids: what ``capeval data export`` writes and what a
user's scores file (``capeval bench --scores``) is matched against.

A unit's id is a content hash of its candidate, references and image file name, so it does not
depend on row order, on the capeval version or on the run; identical units (the same caption
judged by three experts) share one id and one score.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..stats.experiments import correlation_units, pairwise_units
from ..scorefile import unit_id


@dataclass(frozen=True)
class UnitList:
    """One corpus the runner scores in one call: a correlation table's rows, a pairwise table's
    a-then-b candidates, or one system's captions."""

    candidates: list[str]
    references: list[list[str]] | None  # None: a reference-free table
    images: list[str | None]
    keys: list[dict[str, Any]]  # the benchmark's own ids of each unit
    system: str | None = None

    def refs(self) -> list[list[str]]:
        return self.references if self.references is not None else [[] for _ in self.candidates]

    def ids(self) -> list[str]:
        return [unit_id(c, r, i) for c, r, i in zip(self.candidates, self.refs(), self.images)]


def _images(table, n: int) -> list[str | None]:
    return list(table.images) if table.images is not None else [None] * n


def _refs(refs, n: int) -> list[list[str]] | None:
    """None for a reference-free table (scored as such); its unit ids hash an empty list."""
    return [list(r) for r in refs] if refs is not None else None


def unit_lists(table) -> list[UnitList]:
    """Every corpus of ``table``, in the order and shape :mod:`capeval.metaeval.runner` scores
    (one corpus per system for a system table: each system's output is scored on its own)."""
    from ..data import CorrelationTable, PairwiseTable, SystemTable

    if isinstance(table, CorrelationTable):
        cands, refs = correlation_units(table)
        keys = [{"row": i, "group": g} for i, g in enumerate(table.groups)]
        return [UnitList(list(cands), _refs(refs, len(cands)), _images(table, len(cands)), keys)]
    if isinstance(table, PairwiseTable):
        n = len(table)
        if table.references is None:
            cands, refs = list(table.candidates_a) + list(table.candidates_b), None
        else:
            cands, refs = pairwise_units(table)
        imgs = _images(table, n)
        keys = [{"pair": i, "side": side, "category": table.categories[i]}
                for side in ("a", "b") for i in range(n)]
        return [UnitList(list(cands), _refs(refs, len(cands)), imgs + imgs, keys)]
    if isinstance(table, SystemTable):
        imgs = _images(table, len(table))
        return [UnitList(list(c), _refs(table.references, len(c)), imgs,
                         [{"system": s, "image_id": i} for i in table.image_ids], system=s)
                for s, c in table.systems.items()]
    raise TypeError(f"unexpected table type {type(table).__name__}")


def export_records(table) -> Iterator[dict[str, Any]]:
    """One record per distinct unit, in first-appearance order: ``id``, ``candidate``,
    ``references``, ``image``, the benchmark name and ``keys`` (the benchmark's own ids of
    every row the unit stands for)."""
    out: dict[str, dict[str, Any]] = {}
    for ul in unit_lists(table):
        for uid, c, r, img, key in zip(ul.ids(), ul.candidates, ul.refs(), ul.images, ul.keys):
            rec = out.get(uid)
            if rec is None:
                rec = out[uid] = {"id": uid, "candidate": c, "references": r, "image": img,
                                  "benchmark": table.name, "keys": []}
            rec["keys"].append(key)
    return iter(out.values())


def image_names(table) -> list[str | None]:
    """Distinct image names the table refers to (None when its loader records none)."""
    return list(dict.fromkeys(img for ul in unit_lists(table) for img in ul.images))


def load_table(name: str, root=None, load_options: dict[str, Any] | None = None):
    from .. import data

    opts = dict(load_options or {})
    if opts.pop("ref_mode", "set") != "set":
        from ..errors import InputError

        raise InputError("ref_mode changes how units are scored, not which units there are; export without it")
    return data.load(name, root, **opts)


def export_units(name: str, path, *, root=None, load_options: dict[str, Any] | None = None) -> int:
    """Write the distinct units of benchmark ``name`` as JSONL (atomically); returns how many."""
    from ..outputs import atomic_open

    table = load_table(name, root, load_options)
    n = 0
    with atomic_open(path) as fh:
        for rec in export_records(table):
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            n += 1
    return n


@dataclass(frozen=True)
class ImageCheck:
    benchmark: str
    images: list[str]  # distinct image names the benchmark refers to
    found: dict[str, str]  # name -> path
    missing: list[str]
    unnamed: int  # units whose loader records no image


def check_images(name: str, images_dir, *, root=None, load_options: dict[str, Any] | None = None) -> ImageCheck:
    """Which of the benchmark's images ``images_dir`` holds (``capeval data images``)."""
    from ..imagedir import ImageDir

    table = load_table(name, root, load_options)
    names = image_names(table)
    listed = [n for n in names if n is not None]
    unnamed = sum(img is None for ul in unit_lists(table) for img in ul.images)
    d = ImageDir(images_dir)
    found, missing = {}, []
    for img in listed:
        p = d.find(img)
        if p is None:
            missing.append(img)
        else:
            found[img] = str(p)
    return ImageCheck(name, listed, found, missing, unnamed)
