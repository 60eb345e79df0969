"""``capeval.learn.rowlocal``: the models' scoring arithmetic in the order its docstring states,
checked against the same sums written out in Python floats (IEEE doubles, one rounding per
operation, no FMA), so a change of order, of where the bias is added or a return to matrix
products fails here."""
from __future__ import annotations

import numpy as np
import pytest

from capeval.learn import mlp, ranker
from capeval.learn.features import MinMax, parse_features
from capeval.learn.model import LearnedModel
from capeval.learn.ranker_features import parse
from capeval.learn.ranker_model import RankerModel
from capeval.learn.rowlocal import BLOCK, dense, dot, forward


def _dot_py(z, w, b=None):
    acc = float(z[0]) * float(w[0])
    for k in range(1, len(w)):
        acc = acc + float(z[k]) * float(w[k])
    return acc if b is None else acc + float(b)


def _forward_py(params, z):
    h = [float(v) for v in z]
    n_layers = len(params) // 2
    for i in range(n_layers):
        W, b = params[2 * i], params[2 * i + 1]
        h = [_dot_py(h, W[:, j], b[j]) for j in range(W.shape[1])]
        if i < n_layers - 1:
            h = [max(v, 0.0) for v in h]
    return h


def _params(rng, sizes):
    out = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        out += [rng.standard_normal((a, b)), rng.standard_normal(b)]
    return out


def test_dot_sums_the_columns_in_order_then_adds_the_bias():
    rng = np.random.default_rng(0)
    Z, w = rng.standard_normal((50, 23)) * 10.0 ** rng.integers(-3, 4, size=23), rng.standard_normal(23)
    assert dot(Z, w).tolist() == [_dot_py(z, w) for z in Z]
    assert dot(Z, w, 0.3).tolist() == [_dot_py(z, w, 0.3) for z in Z]
    assert dot(np.empty((3, 0)), np.empty(0), 1.5).tolist() == [1.5] * 3
    with pytest.raises(ValueError, match="shape"):
        dot(Z, w[:-1])


def test_dense_and_forward_follow_the_stated_order():
    rng = np.random.default_rng(1)
    params = _params(rng, [8, 72, 72, 2])
    X = rng.standard_normal((20, 8))
    assert dense(X, params[0], params[1]).tolist() == [_forward_py(params[:2], x) for x in X]
    assert forward(params, X).tolist() == [_forward_py(params, x) for x in X]
    with pytest.raises(ValueError, match="do not fit"):
        dense(X, params[2], params[3])


def test_blocks_bound_memory_and_change_no_value():
    rng = np.random.default_rng(2)
    params = _params(rng, [3, 4, 1])
    X = rng.standard_normal((BLOCK + 5, 3))
    whole = forward(params, X)
    assert whole.shape == (BLOCK + 5, 1)
    assert np.array_equal(whole[-5:], forward(params, X[-5:]))
    assert np.array_equal(whole[:5], forward(params, X[:5]))


def test_models_score_with_the_row_local_form():
    rng = np.random.default_rng(3)
    feats = parse_features("bleu1+bleu2+meteor")
    lo, hi = np.zeros(3), np.array([1.0, 1.0, 0.5])
    X = rng.uniform(-0.1, 1.1, size=(30, 3))
    Z = MinMax(lo, hi).transform(X, clip=True)
    net = LearnedModel("mlp", _params(rng, [3, 5, 2]), MinMax(lo, hi), feats)
    d = np.array([(lambda z: z[1] - z[0])(_forward_py(net.params, z)) for z in Z])
    # the logistic of the logit difference, as training's p_class1 takes it
    assert np.array_equal(net.predict(X), mlp._class1(np.stack([np.zeros_like(d), d], axis=1)))
    lin = LearnedModel("linear", [rng.standard_normal(3), np.array(0.25)], MinMax(lo, hi), feats)
    assert lin.predict(X).tolist() == [_dot_py(z, lin.params[0], 0.25) for z in Z]

    rfeats = parse("bleu4+rouge_l+length")
    scaler = ranker.Scaler(np.zeros(3), np.full(3, 20.0), np.full(3, 0.5), np.full(3, 2.0))
    Zr = scaler.transform(X * 20)
    ranked = RankerModel("linear", [rng.standard_normal(3)], scaler, rfeats)
    assert ranked.predict(X * 20).tolist() == [_dot_py(z, ranked.params[0]) for z in Zr]
    rmlp = RankerModel("mlp", _params(rng, [3, 6, 1]), scaler, rfeats)
    assert rmlp.predict(X * 20).tolist() == [_forward_py(rmlp.params, z)[0] for z in Zr]
    # training's matrix-product form (model selection) stays beside it and agrees to rounding
    np.testing.assert_allclose(ranked.predict_batch(X * 20), ranked.predict(X * 20), rtol=1e-12, atol=1e-12)
