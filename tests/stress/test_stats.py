"""The per-cell statistics on hand-made score vectors."""
from __future__ import annotations

import math

import numpy as np
import pytest

from capeval.stress.stats import SAME_FRACTION, TIE_TOL, cell, same_tolerance

NAN = float("nan")


def test_lower():
    control = np.array([0.5, 0.5, 0.5, 0.5, 0.5])
    perturbed = np.array([0.4, 0.5, 0.6, 0.3, 9.9])
    applicable = np.array([True, True, True, True, False])
    c = cell(control, perturbed, applicable, "lower", n_resamples=200)
    assert (c.n, c.skipped, c.undefined) == (4, 1, 0)
    assert c.accuracy == 0.5 and c.tie_rate == 0.25
    assert c.mean_delta == pytest.approx(-0.05) and c.median_delta == pytest.approx(-0.05)
    assert c.ci[0] <= c.mean_delta <= c.ci[1] and c.median_ci[0] <= c.median_delta <= c.median_ci[1]


def test_not_higher_counts_ties_as_right():
    c = cell(np.zeros(4), np.array([0.0, -1.0, 1.0, TIE_TOL / 2]), np.ones(4, bool), "not_higher", n_resamples=50)
    assert c.accuracy == 0.75 and c.tie_rate == 0.5


def test_same_uses_the_tolerance():
    c = cell(np.zeros(4), np.array([0.0, 0.05, -0.05, 0.2]), np.ones(4, bool), "same", tolerance=0.1, n_resamples=50)
    assert c.accuracy == 0.75
    assert same_tolerance(np.array([0.0, 2.0])) == pytest.approx(SAME_FRACTION * 1.0)


def test_lower_is_better_metric_reads_the_other_way():
    c = cell(np.zeros(2), np.array([1.0, -1.0]), np.ones(2, bool), "lower", higher_is_better=False, n_resamples=50)
    assert c.accuracy == 0.5
    c = cell(np.zeros(2), np.array([1.0, 2.0]), np.ones(2, bool), "lower", higher_is_better=False, n_resamples=50)
    assert c.accuracy == 1.0


def test_undefined_and_empty():
    c = cell(np.array([NAN, 1.0]), np.array([0.0, NAN]), np.ones(2, bool), "lower", n_resamples=50)
    assert (c.n, c.undefined) == (0, 2) and math.isnan(c.accuracy)
    c = cell(np.ones(3), np.ones(3), np.zeros(3, bool), "lower", n_resamples=50)
    assert (c.n, c.skipped) == (0, 3) and c.as_dict()["accuracy"] is None


def test_bootstrap_is_seeded():
    rng = np.random.default_rng(0)
    control, perturbed = rng.random(50), rng.random(50)
    a = cell(control, perturbed, np.ones(50, bool), "lower", n_resamples=300, seed=3)
    b = cell(control, perturbed, np.ones(50, bool), "lower", n_resamples=300, seed=3)
    assert a == b
