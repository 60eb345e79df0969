"""Shared fixtures. Data-dependent tests find the team data through one fixture and skip,
with the reason, when it is absent (CI has it, so CI runs them)."""
from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import settings

from capeval.paths import data_root

# Hypothesis profiles. "ci", the default everywhere: derandomized, a fixed count per test, no
# example database, so every run on every machine tries the same examples (a failure seen once
# is seen by everyone). "deep": the long randomized search, run on demand with
#   python -m pytest -m fuzz --hypothesis-profile=deep
# (tests/_budget.py raises each test's count to the profile's); what it finds is replayed from
# the local database and belongs in the test as an @example.
settings.register_profile(
    "ci", derandomize=True, max_examples=100, deadline=None, database=None, print_blob=True
)
settings.register_profile("deep", derandomize=False, max_examples=2000, deadline=None, print_blob=True)
# --hypothesis-profile (read by Hypothesis's pytest plugin after this file) overrides this.
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(config, items):
    # Every property test is part of the fuzz selection (-m fuzz).
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.fuzz)


@pytest.fixture(scope="session")
def data_dir():
    root = data_root()
    if root is None:
        pytest.skip("benchmark data not found: set CAPEVAL_DATA (default ../shared/data)")
    return root


@pytest.fixture(scope="session")
def java():
    if shutil.which("java") is None:
        pytest.skip("Java not installed")
    return shutil.which("java")


@pytest.fixture(scope="session")
def shared_texts(data_dir) -> list[str]:
    """Every distinct caption text of the shared data (candidates, references, system outputs),
    sorted: the corpus the exactness tests of the tokenizer paths run on."""
    from capeval import data

    texts: set[str] = set()
    for name in ("flickr8k-expert", "flickr8k-cf", "composite", "pascal50s", "abstract50s", "tanti-coco",
                 "tanti-flickr8k", "tanti-flickr30k"):
        t = data.load(name, root=data_dir)
        for attr in ("candidates", "candidates_a", "candidates_b"):
            texts.update(getattr(t, attr, None) or [])
        for refs in t.references:
            texts.update(refs)
        for caps in (getattr(t, "systems", None) or {}).values():
            texts.update(caps)
    return sorted(texts)
