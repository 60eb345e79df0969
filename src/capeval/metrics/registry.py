"""Registry of metric families and their outputs.

Metric modules register themselves at import (``@register``). Discovery imports every
module in ``capeval.metrics``; modules keep heavy imports (torch, spaCy) inside functions,
so discovery stays cheap.
"""
from __future__ import annotations

import importlib
import pkgutil
import threading

from ..errors import UnknownMetricError
from .base import Metric, OutputInfo

_FAMILIES: dict[str, type[Metric]] = {}
_OUTPUTS: dict[str, type[Metric]] = {}
_discovered = False
_discover_lock = threading.Lock()  # a second thread must not see a half-filled registry


def register(cls: type[Metric]) -> type[Metric]:
    if cls.family in _FAMILIES and _FAMILIES[cls.family] is not cls:
        raise ValueError(f"metric family {cls.family!r} registered twice")
    _FAMILIES[cls.family] = cls
    for out in cls.outputs:
        owner = _OUTPUTS.get(out.name)
        if owner is not None and owner is not cls:
            raise ValueError(f"output {out.name!r} claimed by {owner.family} and {cls.family}")
        _OUTPUTS[out.name] = cls
    return cls


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    with _discover_lock:
        if _discovered:
            return
        import capeval.metrics as pkg

        for mod in pkgutil.iter_modules(pkg.__path__):
            if mod.name.startswith("_") or mod.name in {"base", "registry"}:
                continue
            importlib.import_module(f"capeval.metrics.{mod.name}")
        _discovered = True


def family_for(output: str) -> type[Metric]:
    # An output registered already (capeval.api imports the n-gram families) needs no discovery:
    # importing every other metric module costs a first call ~30-60 ms CPU.
    cls = _OUTPUTS.get(output)
    if cls is not None:
        return cls
    _discover()
    try:
        return _OUTPUTS[output]
    except KeyError:
        known = ", ".join(sorted(_OUTPUTS))
        raise UnknownMetricError(f"unknown metric {output!r}; known metrics: {known}") from None


def get_family(family: str) -> type[Metric]:
    cls = _FAMILIES.get(family)
    if cls is not None:
        return cls
    _discover()
    try:
        return _FAMILIES[family]
    except KeyError:
        raise UnknownMetricError(
            f"unknown metric family {family!r}; known: {', '.join(sorted(_FAMILIES))}"
        ) from None


def list_metrics() -> list[OutputInfo]:
    """Every registered output, sorted by family then declaration order."""
    _discover()
    rows: list[OutputInfo] = []
    for fam in sorted(_FAMILIES):
        rows.extend(_FAMILIES[fam].outputs)
    return rows
