import numpy as np
import pytest

from capeval.errors import InputError
from capeval.learn import mlp


def _toy(n=400, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.2).astype(np.int64)  # not linearly separable
    return X, y


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(0)
    params = mlp.init_params(3, (5, 4), rng)
    for p in params[1::2]:
        p += rng.normal(0, 0.1, p.shape)  # non-zero biases exercise their gradients too
    X, y = _toy(20)
    _, grads = mlp.loss_and_grads(params, X, y, l2=0.01)
    eps = 1e-6
    for k, p in enumerate(params):
        for idx in np.ndindex(p.shape):
            old = p[idx]
            p[idx] = old + eps
            up, _ = mlp.loss_and_grads(params, X, y, 0.01)
            p[idx] = old - eps
            down, _ = mlp.loss_and_grads(params, X, y, 0.01)
            p[idx] = old
            assert grads[k][idx] == pytest.approx((up - down) / (2 * eps), rel=1e-5, abs=1e-8)


def test_init_is_he_normal_with_zero_biases():
    params = mlp.init_params(8, (72, 72), np.random.default_rng(0))
    assert [p.shape for p in params] == [(8, 72), (72,), (72, 72), (72,), (72, 2), (2,)]
    assert all(np.all(b == 0) for b in params[1::2])
    assert np.std(params[2]) == pytest.approx(np.sqrt(2 / 72), rel=0.05)


def test_p_class1_is_softmax_of_class_one():
    rng = np.random.default_rng(3)
    params = mlp.init_params(4, (6,), rng)
    X = rng.normal(0, 30, (50, 4))  # large logits: the stable form must not overflow
    z = mlp.logits(params, X)
    zz = z - z.max(axis=1, keepdims=True)
    expect = np.exp(zz[:, 1]) / np.exp(zz).sum(axis=1)
    np.testing.assert_allclose(mlp.p_class1(params, X), expect, rtol=1e-12, atol=1e-300)


def test_training_is_bit_for_bit_deterministic_and_seeded():
    X, y = _toy()
    cfg = mlp.TrainConfig(hidden=(8, 8), max_epochs=5, batch_size=32, seed=7)
    a, log_a = mlp.train(X, y, cfg)
    b, log_b = mlp.train(X, y, cfg)
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    assert log_a.history == log_b.history
    c, _ = mlp.train(X, y, mlp.TrainConfig(hidden=(8, 8), max_epochs=5, batch_size=32, seed=8))
    assert not all(np.array_equal(p, q) for p, q in zip(a, c))


def test_training_learns_a_nonlinear_boundary():
    X, y = _toy(600)
    params, _ = mlp.train(X, y, mlp.TrainConfig(hidden=(16, 16), max_epochs=60, batch_size=32, lr=1e-2, seed=0))
    acc = np.mean((mlp.p_class1(params, X) > 0.5) == y)
    assert acc > 0.95
    lin, _ = mlp.train(X, y, mlp.TrainConfig(hidden=(), max_epochs=60, batch_size=32, lr=1e-2, seed=0))
    assert np.mean((mlp.p_class1(lin, X) > 0.5) == y) < acc


def test_early_stopping_keeps_the_best_epoch():
    X, y = _toy()
    scores = iter([0.1, 0.5, 0.3, 0.2, 0.4, 0.1, 0.0])
    seen = []

    def validate(f):
        seen.append(f(X).copy())
        return next(scores)

    params, log = mlp.train(X, y, mlp.TrainConfig(hidden=(4,), max_epochs=7, patience=3, seed=0), validate)
    assert log.best_epoch == 2 and log.best_score == 0.5
    assert log.epochs_run == 5  # epochs 3, 4, 5 did not beat epoch 2
    np.testing.assert_array_equal(mlp.p_class1(params, X), seen[1])


def test_bad_labels_and_shapes_are_named():
    X, y = _toy(10)
    with pytest.raises(InputError, match="labels must be 0"):
        mlp.train(X, y + 1, mlp.TrainConfig(max_epochs=1))
    with pytest.raises(InputError, match="do not line up"):
        mlp.train(X, y[:5], mlp.TrainConfig(max_epochs=1))


def test_monotone_training_gives_a_score_that_never_falls_when_a_feature_rises():
    from capeval.learn.mlp import TrainConfig, p_class1, train

    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(400, 3))
    # a non-monotone target: class 1 in the middle of feature 0; an unconstrained net learns the bump
    y = (np.abs(X[:, 0]) < 0.4).astype(np.int64)
    cfg = TrainConfig(hidden=(8, 8), max_epochs=40, batch_size=50, lr=1e-2, seed=1)
    free, _ = train(X, y, cfg)
    mono, _ = train(X, y, TrainConfig(**{**cfg.__dict__, "monotone": True}))
    grid = np.zeros((201, 3))
    grid[:, 0] = np.linspace(-1, 1, 201)
    assert np.any(np.diff(p_class1(free, grid)) < -1e-6)  # the bump: falls somewhere
    for j in range(3):
        g = rng.uniform(-1, 1, size=(201, 3))
        g[:, j] = np.linspace(-1, 1, 201)
        g[:, [k for k in range(3) if k != j]] = g[0, [k for k in range(3) if k != j]]
        assert np.all(np.diff(p_class1(mono, g)) >= -1e-12)
    assert all(np.all(mono[2 * i] >= 0) for i in range(2))
    assert TrainConfig(monotone=True).as_dict()["monotone"] is True and "monotone" not in TrainConfig().as_dict()


def test_adam_steps_are_bias_corrected():
    # With a constant gradient, bias-corrected Adam moves each parameter by lr * sign(g) on
    # every step (m̂ = g, v̂ = g², up to ε); without the correction the first step would be
    # lr * (1-β1)/sqrt(1-β2) ≈ 3.16 lr and the steps would shrink towards lr.
    lr = 0.01
    g = np.array([2.0, -0.5, 0.1])
    p = [np.zeros(3)]
    opt = mlp.Adam(lr=lr)
    for t in range(1, 6):
        before = p[0].copy()
        opt.step(p, [g], lr)
        np.testing.assert_allclose(before - p[0], lr * np.sign(g), rtol=1e-5)
    assert opt.t == 5
