"""Example counts of the property tests under the Hypothesis profiles of tests/conftest.py."""
from __future__ import annotations

from hypothesis import settings


def examples(n: int) -> int:
    """``n`` under the derandomized ``ci`` profile (the same examples on every run and machine);
    under a randomized profile (``deep``), that profile's count when it is larger."""
    current = settings.default
    return n if current.derandomize else max(n, current.max_examples)
