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
