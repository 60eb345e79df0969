"""The optional compiled core of the per-caption metrics (``capeval._speedups``, built from
``_speedups.c`` when a C compiler is present at install time).

Every compiled function has a numpy/Python twin giving the same results (the tests run both
and compare with ``==``). ``core`` is the loaded module, or None when it was not built or when
the environment variable ``CAPEVAL_PURE_PYTHON`` is set to a non-empty value other than "0";
callers read ``_compiled.core`` at call time, so tests can switch paths by assigning it.
"""
from __future__ import annotations

import os


def _load():
    # A static import, not importlib by name: the score-cache keys follow static imports to
    # the C source (service/codehash.py), so an edit to _speedups.c changes them.
    if os.environ.get("CAPEVAL_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from . import _speedups
    except ImportError:
        return None
    return _speedups


core = _load()
