"""Benchmark loaders: ``load(name, root=None, **options)`` returns a
:class:`CorrelationTable`, :class:`PairwiseTable` or :class:`SystemTable`;
``available()`` says what is on disk.

===================  ===========  ==========================================================
name                 table        options (default first)
===================  ===========  ==========================================================
flickr8k-expert      correlation  protocol="clipscore"|"elliott-keller", rebuild_from_raw=False
flickr8k-cf          correlation  rating="file"|"counts"
composite            correlation  refs="image-minus-human"|"all5"|"per-row"
pascal50s            pairwise     labels="expert-json"|"pair-majority", k=5|"all", seed=42, ties
abstract50s          pairwise     ties="random"|"keep"|"drop", seed=42
tanti-flickr8k/...   system       include_human=False (also tanti-flickr30k, tanti-coco)
tanti-human200       correlation  judgement="acc"|"flu", table="caption"|"system"
foil-sample          pairwise     split="test"|"train", nrefs="all"|"1", coco_captions, file
thumb                correlation  rows="machine"|"all", target="total"|"P"|"R", table
nebula               correlation  source="expert-json"|"hf", split="test"|"valid"|"train" (hf)
polaris              correlation  split="test"|"val"|"train"|"exp-val" (no references)
===================  ===========  ==========================================================

Every table's ``protocol`` names the choices that change numbers; put it in signatures.
Loader docstrings (``capeval.data.<module>``) give the rules and their sources.
"""
from __future__ import annotations

from pathlib import Path

from .records import CorrelationTable, DatasetInfo, PairwiseTable, SystemTable
from .registry import get_spec, specs

__all__ = [
    "CorrelationTable",
    "DatasetInfo",
    "PairwiseTable",
    "SystemTable",
    "available",
    "load",
    "names",
    "training_pool",
]


def names() -> list[str]:
    return [s.name for s in specs()]


def load(name: str, root: Path | str | None = None, *, line_breaks: str = "space",
         **options) -> CorrelationTable | PairwiseTable | SystemTable:
    """Build benchmark ``name`` from the data under ``root`` (default: ``data_root()``).

    Files are read as released: a line break inside a caption or reference is read as a
    space, as :func:`capeval.score` does by default, and the protocol counts the texts that
    held one (``breaks: space:N``). ``line_breaks="refuse"`` (strict mode) raises instead,
    naming the first such text. docs/DATA_FORMATS.md lists what each loader does with the
    other oddities of published files."""
    from .loading import load_table

    return load_table(name, root, line_breaks=line_breaks, **options)


def available(root: Path | str | None = None, *, verify: bool = False, count: bool = True) -> list[DatasetInfo]:
    """One :class:`DatasetInfo` per benchmark. ``verify`` hashes every file against its
    folder's SHA256SUMS (~1 s); ``count`` loads each table to report its rows (~3 s)."""
    from .status import dataset_infos

    return dataset_infos(root, verify=verify, count=count)


def training_pool(root: Path | str | None = None, datasets=("flickr8k", "flickr30k", "coco")):
    """Per image of the Tanti test sets: ``(image_id, dataset, human_caps, machine_caps)``."""
    from ._common import resolve_root
    from .tanti import training_pool as _pool

    return _pool(resolve_root(root, get_spec("tanti-coco")), datasets)
