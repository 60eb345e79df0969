"""Fuzzing capeval's public API, readers and statistics (targets in tests/fuzz/targets.py).

Each target runs with a small, derandomized budget here (reproducible CI); the counts of a
large randomized run are recorded by benchmarks/fuzz_counts.py in docs/RELIABILITY.md.
"""
import pytest

from .targets import TARGETS, run_target


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz(name):
    if name == "reader_parquet":
        pytest.importorskip("pyarrow")
    run_target(name, TARGETS[name].ci_examples, derandomize=True)
