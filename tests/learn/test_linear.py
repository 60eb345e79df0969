import numpy as np
import pytest

from capeval.errors import InputError
from capeval.learn.linear import fit_linear, fit_ridge


def test_ridge_without_penalty_recovers_an_exact_linear_target():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(50, 3))
    y = Z @ np.array([0.5, -2.0, 1.0]) + 0.25
    w, b = fit_ridge(Z, y, 0.0)
    np.testing.assert_allclose(w, [0.5, -2.0, 1.0], rtol=1e-10)
    assert float(b) == pytest.approx(0.25, rel=1e-10)


def test_penalty_shrinks_weights_and_collinear_columns_are_fine():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(40, 1))
    Z = np.hstack([z, z])  # BLEU-n columns can be this close
    y = (z[:, 0] > 0).astype(float)
    w0, _ = fit_ridge(Z, y, 0.0)
    w1, _ = fit_ridge(Z, y, 100.0)
    assert np.all(np.isfinite(w0)) and w0[0] == pytest.approx(w0[1])
    assert np.linalg.norm(w1) < np.linalg.norm(w0)


def test_validation_picks_the_best_lambda():
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(30, 2))
    y = (Z[:, 0] > 0).astype(float)
    picks = {0.0: 0.1, 1.0: 0.9, 10.0: 0.3}
    calls = iter(picks)

    def validate(f):
        return picks[next(calls)]

    _, _, lam, history = fit_linear(Z, y, validate, lambdas=tuple(picks))
    assert lam == 1.0 and [h[0] for h in history] == [0.0, 1.0, 10.0]


def test_bad_input_named():
    with pytest.raises(InputError, match="lambda"):
        fit_ridge(np.zeros((3, 2)), np.zeros(3), -1.0)
    with pytest.raises(InputError, match="do not line up"):
        fit_ridge(np.zeros((3, 2)), np.zeros(4), 1.0)
