"""Shared fixtures. Data-dependent tests find the team data through one fixture and skip,
with the reason, when it is absent (CI has it, so CI runs them)."""
from __future__ import annotations

import shutil

import pytest

from capeval.paths import data_root


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
