"""Benchmark loaders: ``load(name)`` returns a :class:`CorrelationTable`,
:class:`PairwiseTable` or :class:`SystemTable`; ``available()`` says what is on disk.

Every table's ``protocol`` names the choices that change numbers; put it in signatures.
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


def load(name: str, root: Path | str | None = None, **options) -> CorrelationTable | PairwiseTable | SystemTable:
    """Build benchmark ``name`` from the data under ``root`` (default: ``data_root()``)."""
    from ._common import resolve_root

    spec = get_spec(name)
    return spec.load_fn()(resolve_root(root, spec), **options)


def available(root: Path | str | None = None, *, verify: bool = False) -> list[DatasetInfo]:
    """One :class:`DatasetInfo` per benchmark; ``verify=True`` hashes the files (slow-ish)."""
    from .status import dataset_infos

    return dataset_infos(root, verify=verify)


def training_pool(root: Path | str | None = None, datasets=("flickr8k", "flickr30k", "coco")):
    """Per image of the Tanti test sets: ``(image_id, dataset, human_caps, machine_caps)``."""
    from ._common import resolve_root
    from .tanti import training_pool as _pool

    return _pool(resolve_root(root, get_spec("tanti-coco")), datasets)
