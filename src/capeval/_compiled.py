"""The optional compiled core of the per-caption metrics (``capeval._speedups``, built from
``_speedups.c`` when a C compiler is present at install time).

Every compiled function has a numpy/Python twin giving the same results (the tests run both
and compare with ``==``). ``core`` is the loaded module, or None when it was not built or when
the environment variable ``CAPEVAL_PURE_PYTHON`` is set to a non-empty value other than "0";
callers read ``_compiled.core`` at call time, so tests can switch paths by assigning it.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from types import ModuleType


def load(importer: Callable[[], ModuleType]) -> ModuleType | None:
    """The compiled module ``importer`` imports, or None when it was not built or when
    ``CAPEVAL_PURE_PYTHON`` switches every compiled core off (every compiled module loads
    through here). ``importer`` imports it statically, not with importlib by name: the
    score-cache keys follow static imports to the C source (service/codehash.py), so an edit
    to the C file changes them."""
    if os.environ.get("CAPEVAL_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        return importer()
    except ImportError:
        return None


def _import_speedups() -> ModuleType:
    from . import _speedups

    return _speedups


core = load(_import_speedups)
