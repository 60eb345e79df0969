"""Run-time form of ``@pytest.mark.needs("model:wordnet")`` (tests/_needs.py), for a test that
learns only in its body that it needs WordNet 3.0; a marker is the usual way."""
from __future__ import annotations

import pytest

from tests._needs import unmet


def require_wordnet() -> None:
    why = unmet("model:wordnet")
    if why is not None:
        pytest.skip(f"needs model:wordnet ({why})")
