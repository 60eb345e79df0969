"""Shared fixtures, and what a test needs decided at collection.

``@pytest.mark.needs("data", "java", "compiled", "extra:semantic", "model:wordnet", ...)`` names
what a test needs beyond ``pip install -e '.[test]'``; each requirement is checked once per
session by a cheap look (a path, PATH, ``importlib.util.find_spec``, the resource resolver),
never by importing the library behind it, and a test with an unmet one is skipped at
collection, naming every unmet one. A test body never turns ``ResourceNotFound`` into a skip:
a regression raising it fails. A fixture states its own requirements with
``@requires(...)`` (tests/_needs.py), and every test using it has them: ``data_dir`` needs
"data", ``java`` needs "java".

With ``CAPEVAL_STRICT_SKIPS=1`` (CI's main run, where everything that can be present is) the
session fails on any skip but one whose unmet requirements are all in :data:`ALLOWED_ABSENT`."""
from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import settings

from capeval.paths import data_root
from tests._needs import ALLOWED_ABSENT, requires, unmet

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


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "needs(*requirements): data[:PATH], java, chromium, compiled[:speedups|meteor|paratable], "
        "extra:NAME, model:RESOURCE, module:NAME, env:NAME (tests/_needs.py); unmet ones skip the test at collection")


#: nodeid -> the unmet requirements its collection-time skip names (read by the strict check).
_SKIPPED_FOR: dict[str, tuple[str, ...]] = {}
#: (nodeid, reason) of every skip that CAPEVAL_STRICT_SKIPS does not accept.
_UNACCEPTED: list[tuple[str, str]] = []


def pytest_collection_modifyitems(config, items):
    for item in items:
        # Every property test is part of the fuzz selection (-m fuzz).
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.fuzz)
        needs = [n for mark in item.iter_markers("needs") for n in mark.args]
        fixture_info = getattr(item, "_fixtureinfo", None)
        for defs in (fixture_info.name2fixturedefs.values() if fixture_info else ()):
            needs += [n for d in defs for n in getattr(d.func, "capeval_needs", ())]
        missing = [(n, why) for n in dict.fromkeys(needs) if (why := unmet(n)) is not None]
        if missing:
            _SKIPPED_FOR[item.nodeid] = tuple(n for n, _ in missing)
            item.add_marker(pytest.mark.skip(reason="needs " + "; ".join(f"{n} ({why})" for n, why in missing)))


def _strict() -> bool:
    return os.environ.get("CAPEVAL_STRICT_SKIPS", "") not in ("", "0")


def _note_skip(report) -> None:
    if not (_strict() and report.skipped) or hasattr(report, "wasxfail"):
        return
    if set(_SKIPPED_FOR.get(report.nodeid, ("-",))) <= set(ALLOWED_ABSENT):
        return
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    _UNACCEPTED.append((report.nodeid, reason))


def pytest_runtest_logreport(report):
    _note_skip(report)


def pytest_collectreport(report):
    _note_skip(report)  # a module skipped at import (pytest.importorskip at module level)


def pytest_sessionfinish(session, exitstatus):
    if _UNACCEPTED and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    if not _UNACCEPTED:
        return
    tr = terminalreporter
    tr.section("skips CAPEVAL_STRICT_SKIPS does not accept", red=True, bold=True)
    tr.line(f"Everything but {', '.join(sorted(ALLOWED_ABSENT))} must be present here (tests/_needs.py):")
    for nodeid, reason in _UNACCEPTED:
        tr.line(f"{nodeid}: {reason}")


@pytest.fixture(scope="session")
@requires("data")
def data_dir():
    root = data_root()
    assert root is not None, "checked at collection (tests/_needs.py)"
    return root


@pytest.fixture(scope="session")
@requires("java")
def java():
    found = os.environ.get("CAPEVAL_JAVA") or shutil.which("java")
    assert found, "checked at collection (tests/_needs.py)"
    return found


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
