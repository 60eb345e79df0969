"""The needs marker and CAPEVAL_STRICT_SKIPS (tests/conftest.py, tests/_needs.py), on small test
files run by pytest in a fresh process with this suite's conftest."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._needs import ALLOWED_ABSENT, unmet

ROOT = Path(__file__).resolve().parents[1]

FILES = {
    "allowed": """
import pytest

@pytest.mark.needs("model:qace-img")
def test_needs_the_checkpoint():
    raise AssertionError("never runs: the requirement is never met")
""",
    "skip_in_body": """
import pytest

def test_skips_itself():
    pytest.skip("something was missing")
""",
    "module_skip": """
import pytest

pytest.importorskip("capeval_no_such_module")

def test_never_collected():
    pass
""",
    "unmet_not_allowed": """
import pytest

@pytest.mark.needs("env:CAPEVAL_TEST_NEEDS_UNSET", "model:qace-img")
def test_opt_in():
    pass
""",
    "met": """
import pytest

@pytest.mark.needs("extra:report")
def test_runs():
    import matplotlib  # noqa: F401
""",
    "fixture": """
import pytest

from tests._needs import requires

@pytest.fixture
@requires("env:CAPEVAL_TEST_NEEDS_UNSET")
def thing():
    raise AssertionError("never set up")

def test_uses_it(thing):
    pass
""",
}


def _pytest(tmp_path: Path, name: str, strict: bool) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text("from tests.conftest import *  # noqa: F403\n")
    (tmp_path / f"test_{name}.py").write_text(FILES[name])
    env = {k: v for k, v in os.environ.items() if k not in ("CAPEVAL_STRICT_SKIPS", "CAPEVAL_TEST_NEEDS_UNSET")}
    env["PYTHONPATH"] = str(ROOT)
    if strict:
        env["CAPEVAL_STRICT_SKIPS"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("name", "strict_code", "summary"), [
    ("allowed", 0, "1 skipped"),
    ("skip_in_body", 1, "something was missing"),
    ("module_skip", 1, "capeval_no_such_module"),
    ("unmet_not_allowed", 1, "needs env:CAPEVAL_TEST_NEEDS_UNSET"),
    ("met", 0, "1 passed"),
    ("fixture", 1, "needs env:CAPEVAL_TEST_NEEDS_UNSET"),
])
def test_strict_skips_fail_the_session_outside_the_allow_list(tmp_path, name, strict_code, summary):
    if name == "met" and unmet("extra:report"):
        pytest.fail("the test extra brings matplotlib (extra:report)")
    lax = _pytest(tmp_path, name, strict=False)
    # A module skipped whole leaves no test: pytest's "no tests collected".
    assert lax.returncode == (pytest.ExitCode.NO_TESTS_COLLECTED if name == "module_skip" else 0), lax.stdout[-3000:]
    strict = _pytest(tmp_path, name, strict=True)
    assert strict.returncode == strict_code, strict.stdout[-3000:]
    assert summary in strict.stdout, strict.stdout[-3000:]
    listed = "skips CAPEVAL_STRICT_SKIPS does not accept" in strict.stdout
    assert listed == (strict_code == 1), strict.stdout[-3000:]


def test_a_skip_at_collection_names_every_unmet_requirement(tmp_path):
    out = _pytest(tmp_path, "unmet_not_allowed", strict=False).stdout
    assert "needs env:CAPEVAL_TEST_NEEDS_UNSET (set CAPEVAL_TEST_NEEDS_UNSET=1 to run it); model:qace-img (" in out


def test_requirements_are_checked_by_name():
    assert unmet("java") is None or "Java" in unmet("java")
    assert unmet("data:capeval-no-such-folder") is not None or unmet("data") is not None
    assert "not installed" in unmet("module:capeval_no_such_module")
    for bad in ("model:no-such-resource", "extra:no-such-extra", "nonsense"):
        with pytest.raises(Exception, match="unknown"):
            unmet(bad)


def test_the_allow_list_is_short_and_each_entry_is_checkable():
    assert len(ALLOWED_ABSENT) <= 8
    for need in ALLOWED_ABSENT:
        result = unmet(need)  # raises on a name the checks do not know
        assert result is None or isinstance(result, str)
