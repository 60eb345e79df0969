"""Row-local model arithmetic for scoring: a row's score depends on that row's features alone.

A house rule is that a value never depends on the rows scored with it, so an input scores the
same in memory, in chunks, in worker processes and one row at a time. numpy's matrix products
break it: BLAS blocks, vectorises and threads a product by the shape of the whole matrix, so a
row's sums are rounded in an order set by the rows around it (on 1,000 feature rows predicted
one at a time vs all at once, 44% of ``learned`` and 25% of ``nneval`` scores differed in their
last bits). The functions here instead accumulate over the input features in one fixed order,
feature 0 first, with one elementwise multiply and one elementwise add per feature, vectorised
across rows only. Each of those is a single IEEE-754 rounding of the same two numbers whatever
the array around them (numpy never fuses them into an FMA), so a row gets the same bits on any
BLAS, thread count, batch and row order.

The order, written out (for scoring, ``capeval.learn.model`` and ``capeval.learn.ranker_model``
first normalise each feature elementwise; that step was already row-local):

* a weighted sum: ``acc = z[0]·w[0]``, then ``acc += z[k]·w[k]`` for k = 1, 2, ... in column
  order, and the bias (if any) added last, ``acc + b``, where the matrix form ``z @ w + b``
  adds it too;
* a dense layer: the same per output unit, ``h = x[:, 0, None]·W[0, :]``, then
  ``h += x[:, k, None]·W[k, :]`` for k = 1, 2, ..., then ``h + b``.

Training keeps numpy's matrix products (its forward and backward passes are batch computations
anyway), so the trained weights and the shipped files are unchanged; only scoring runs here.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Rows per block: bounds the (rows × hidden units) temporaries of a dense layer. Blocks only
#: bound memory; every row is computed alone, so the block size never changes a value.
BLOCK = 16384


def dot(Z: np.ndarray, w: np.ndarray, b: float | None = None) -> np.ndarray:
    """``Z @ w (+ b)`` per row, accumulated over the columns in order (module docstring)."""
    Z = np.asarray(Z, dtype=float)
    w = np.asarray(w, dtype=float)
    if Z.ndim != 2 or w.shape != (Z.shape[1],):
        raise ValueError(f"cannot combine features of shape {Z.shape} with weights of shape {w.shape}")
    if Z.shape[1] == 0:
        acc = np.zeros(Z.shape[0])
    else:
        acc = Z[:, 0] * w[0]
        for k in range(1, Z.shape[1]):
            acc += Z[:, k] * w[k]
    if b is not None:
        acc = acc + float(b)
    return acc


def dense(H: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``H @ W + b`` per row, accumulated over H's columns in order (module docstring)."""
    if H.shape[1] != W.shape[0] or b.shape != (W.shape[1],) or W.shape[0] == 0:
        raise ValueError(f"layer shapes {H.shape} @ {W.shape} + {b.shape} do not fit")
    out = H[:, 0, None] * W[0]
    tmp = np.empty_like(out)
    for k in range(1, W.shape[0]):
        np.multiply(H[:, k, None], W[k], out=tmp)
        out += tmp
    out += b
    return out


def forward(params: Sequence[np.ndarray], Z: np.ndarray) -> np.ndarray:
    """The ReLU network ``[W1, b1, ..., W_out, b_out]``'s output layer for each row, each layer
    by :func:`dense` (ReLU between layers, none after the last)."""
    Z = np.asarray(Z, dtype=float)
    n_layers = len(params) // 2
    n_out = params[-1].shape[0]
    out = np.empty((Z.shape[0], n_out))
    for start in range(0, Z.shape[0], BLOCK):
        h = Z[start:start + BLOCK]
        for i in range(n_layers):
            h = dense(h, np.asarray(params[2 * i], dtype=float), np.asarray(params[2 * i + 1], dtype=float))
            if i < n_layers - 1:
                np.maximum(h, 0.0, out=h)
        out[start:start + BLOCK] = h
    return out
