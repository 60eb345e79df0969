"""Fuzzing capeval's public API, readers and statistics (targets in tests/fuzz/targets.py).

Each target runs with a small, derandomized budget here under the ci profile (reproducible CI)
and with the deep profile's count, randomized, under `--hypothesis-profile=deep`; the counts of a
large randomized run are recorded by benchmarks/fuzz_counts.py in docs/RELIABILITY.md.
"""
import pytest
from hypothesis import settings

from tests._budget import examples

from .targets import TARGETS, run_target


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz(name):
    if name == "reader_parquet":
        pytest.importorskip("pyarrow")
    run_target(name, examples(TARGETS[name].ci_examples), derandomize=settings.default.derandomize)
