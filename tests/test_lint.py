"""ruff and mypy as CI runs them (configured in pyproject.toml): the tree lints clean and the
public API type-checks."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: it is in the test extra")
    return found


@pytest.mark.slow
def test_ruff_is_clean():
    res = subprocess.run([_tool("ruff"), "check", "--no-cache", "src", "tests", "benchmarks", "scripts"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]


@pytest.mark.slow
def test_mypy_public_api_is_clean():
    res = subprocess.run([_tool("mypy"), "--no-incremental", "--cache-dir", "/dev/null"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
