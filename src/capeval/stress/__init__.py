"""A stress test for caption metrics: which perturbations of a caption a metric notices, and which it
wrongly ignores (docs/STRESS.md). ``capeval stress`` and :func:`capeval.stress` run it."""
from __future__ import annotations

import sys
import types

from .items import SOURCES, StressItem
from .rules import BY_NAME, PERTURBATIONS, Perturbation, Skip
from .suite import DEFAULT_SEED, SUITE_VERSION, StressResult, stress

__all__ = [
    "BY_NAME",
    "DEFAULT_SEED",
    "PERTURBATIONS",
    "SOURCES",
    "SUITE_VERSION",
    "Perturbation",
    "Skip",
    "StressItem",
    "StressResult",
    "stress",
]


class _CallableModule(types.ModuleType):
    """``capeval.stress(...)`` calls :func:`capeval.stress.suite.stress`: the name is both this
    subpackage and the function (the import system sets the package attribute to the module)."""

    def __call__(self, source=None, metrics=None, **kwargs) -> StressResult:
        return stress(source, metrics, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
