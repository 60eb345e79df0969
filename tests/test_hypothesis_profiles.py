"""The Hypothesis profiles of tests/conftest.py: CI runs are reproducible, the deep search is opt-in."""
from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._budget import examples


@pytest.mark.skipif(
    bool(os.environ.get("HYPOTHESIS_PROFILE")), reason="HYPOTHESIS_PROFILE chooses another profile"
)
def test_default_profile_is_derandomized_without_database(pytestconfig):
    if pytestconfig.getoption("hypothesis_profile", None):
        pytest.skip("--hypothesis-profile chooses another profile")
    current = settings.default
    assert current.derandomize is True
    assert current.database is None
    assert examples(300) == 300


def test_profiles_are_registered():
    ci = settings.get_profile("ci")
    deep = settings.get_profile("deep")
    assert ci.derandomize and not deep.derandomize
    assert deep.max_examples > ci.max_examples


def test_fuzz_marker_is_registered(pytestconfig):
    assert any(line.startswith("fuzz:") for line in pytestconfig.getini("markers"))


@given(st.integers())
def test_property_tests_carry_the_fuzz_marker(request, n):
    assert request.node.get_closest_marker("fuzz") is not None
