"""Skips for tests whose metric reads a resource that a plain ``pip install -e '.[test]'`` does not
bring: WordNet 3.0 comes from ``capeval models install wordnet`` or Debian's wordnet-base
(`.ci/run` installs both), so a fresh clone without them skips these tests with the reason."""
from __future__ import annotations

import pytest


def require_wordnet() -> None:
    from capeval.errors import ResourceNotFound
    from capeval.resources.wordnet import wordnet_dir

    try:
        wordnet_dir()
    except ResourceNotFound as exc:
        pytest.skip(f"SPICE-py features need WordNet 3.0: {exc}")
