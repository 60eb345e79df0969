"""Models of capeval's ``learned`` metric, trained on human judgments (pure numpy/scipy).

Human judgments come on different scales (Expert 1–4, CF yes-fractions, COMPOSITE 1–5,
PASCAL-50S and ABSTRACT-50S preferences), so every model here learns from *comparisons*: two
units and which one people preferred. A rating benchmark yields the pairs of units whose mean
ratings differ — all such pairs within an image and as many random pairs across images (the
correlations are computed over all rows, so cross-image order matters too); a preference
benchmark yields its pairs as they are. Each benchmark gets the same total weight, so CF's
47,830 rows do not drown ABSTRACT-50S's 400 pairs.

Features are clipped to the range seen in training and standardised (:class:`Scaler`); the
fraction of clipped values is reported, never hidden.

* ``linear`` — s(x) = w·z(x), fitted with the pairwise logistic loss (RankNet with a linear
  scorer) and L2, by L-BFGS-B. Metric features may be constrained to non-negative weights
  (``monotone``): a higher BLEU must never lower the score. This is the shipped kind.
* ``pairwise_ls`` — the same scorer fitted by least squares on ±1 pair targets (ridge).
* ``mlp`` — NNEval's 2×72 ReLU network as a scorer, pairwise logistic loss, Adam (numpy).
* ``hgb`` — scikit-learn HistGradientBoosting regression on per-benchmark percentile targets
  with monotone constraints (an experiment: not exportable without pickle, so never shipped).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize

from ..errors import InputError
from .judgments import Judgments


# ---- scaling ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Scaler:
    """Clip each column to [lo, hi] seen in training, then (x − mu) / sd."""

    lo: np.ndarray
    hi: np.ndarray
    mu: np.ndarray
    sd: np.ndarray

    @classmethod
    def fit(cls, X: np.ndarray) -> "Scaler":
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[0] < 2:
            raise InputError(f"cannot fit a scaler on an array of shape {X.shape}")
        lo, hi = X.min(axis=0), X.max(axis=0)
        sd = X.std(axis=0)
        return cls(lo, hi, X.mean(axis=0), np.where(sd > 0, sd, 1.0))

    def clipped(self, X: np.ndarray) -> np.ndarray:
        """Boolean mask of the values outside the training range."""
        X = np.asarray(X, dtype=float)
        return (X < self.lo) | (X > self.hi)

    def transform(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.lo.shape[0]:
            raise InputError(f"expected {self.lo.shape[0]} feature columns, got shape {X.shape}")
        return (np.clip(X, self.lo, self.hi) - self.mu) / self.sd


# ---- comparisons -----------------------------------------------------------------------

@dataclass
class Comparisons:
    """Unit pairs (ia, ib) with target P(a preferred) and a per-pair weight."""

    ia: np.ndarray
    ib: np.ndarray
    target: np.ndarray
    weight: np.ndarray

    def __len__(self) -> int:
        return int(self.ia.size)


def comparisons(j: Judgments, *, seed: int = 0, max_pairs: int = 200_000) -> Comparisons:
    """Training pairs of one benchmark (module docstring), total weight 1."""
    rng = np.random.default_rng(seed)
    if j.kind == "preference":
        ia, ib = j.pairs[:, 0], j.pairs[:, 1]
        target = 1.0 - j.labels  # label 0 means a was preferred
    else:
        r = np.asarray(j.ratings, dtype=float)
        by_image: dict[str, list[int]] = {}
        for i, img in enumerate(j.images):
            by_image.setdefault(img, []).append(i)
        within_a, within_b = [], []
        for units in by_image.values():
            u = np.asarray(units)
            if u.size < 2:
                continue
            a, b = np.triu_indices(u.size, k=1)
            keep = r[u[a]] != r[u[b]]
            within_a.append(u[a][keep])
            within_b.append(u[b][keep])
        wa = np.concatenate(within_a) if within_a else np.zeros(0, dtype=int)
        wb = np.concatenate(within_b) if within_b else np.zeros(0, dtype=int)
        n_cross = max(wa.size, min(len(j), max_pairs // 2))
        ca = rng.integers(0, len(j), size=2 * n_cross)
        cb = rng.integers(0, len(j), size=2 * n_cross)
        keep = r[ca] != r[cb]
        ca, cb = ca[keep][:n_cross], cb[keep][:n_cross]
        if wa.size > max_pairs // 2:
            pick = rng.choice(wa.size, size=max_pairs // 2, replace=False)
            wa, wb = wa[pick], wb[pick]
        ia = np.concatenate([wa, ca])
        ib = np.concatenate([wb, cb])
        target = (r[ia] > r[ib]).astype(float)
    if ia.size == 0:
        raise InputError(f"{j.name}: no comparisons to learn from")
    return Comparisons(ia.astype(int), ib.astype(int), target.astype(float), np.full(ia.size, 1.0 / ia.size))


# ---- models ----------------------------------------------------------------------------

@dataclass
class TrainSet:
    """Standardised features of every training benchmark and their comparisons (offsets into Z)."""

    Z: np.ndarray
    pairs: Comparisons
    names: list[str]


def stack(blocks: Sequence[tuple[str, np.ndarray, Comparisons]]) -> TrainSet:
    Zs, ia, ib, t, w, names = [], [], [], [], [], []
    offset = 0
    for name, Z, c in blocks:
        Zs.append(Z)
        ia.append(c.ia + offset)
        ib.append(c.ib + offset)
        t.append(c.target)
        w.append(c.weight / len(blocks))
        names.append(name)
        offset += Z.shape[0]
    cat = np.concatenate
    return TrainSet(np.vstack(Zs), Comparisons(cat(ia), cat(ib), cat(t), cat(w)), names)


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def fit_linear(ts: TrainSet, *, l2: float = 1e-3, monotone: np.ndarray | None = None) -> np.ndarray:
    """Pairwise logistic regression without intercept; weights ≥ 0 where ``monotone``."""
    D = ts.Z[ts.pairs.ia] - ts.Z[ts.pairs.ib]
    t, wt = ts.pairs.target, ts.pairs.weight
    d = D.shape[1]

    def f(w):
        s = D @ w
        loss = float(np.sum(wt * (_softplus(s) - t * s))) + 0.5 * l2 * float(w @ w)
        grad = D.T @ (wt * (_sigmoid(s) - t)) + l2 * w
        return loss, grad

    bounds = [(0.0, None) if (monotone is not None and monotone[k]) else (None, None) for k in range(d)]
    res = minimize(f, np.full(d, 0.01), jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": 2000, "gtol": 1e-10, "ftol": 1e-14})
    return res.x


def fit_pairwise_ls(ts: TrainSet, *, l2: float = 1e-3) -> np.ndarray:
    """Weighted least squares of 2·target − 1 on feature differences (closed form)."""
    D = ts.Z[ts.pairs.ia] - ts.Z[ts.pairs.ib]
    y = 2.0 * ts.pairs.target - 1.0
    wt = ts.pairs.weight
    A = D.T @ (D * wt[:, None]) + l2 * np.eye(D.shape[1])
    return np.linalg.solve(A, D.T @ (wt * y))


def fit_ridge(Z: np.ndarray, y: np.ndarray, w: np.ndarray, *, l2: float = 1e-3) -> np.ndarray:
    """Pointwise weighted ridge regression of per-unit targets (``pointwise_targets``); the
    intercept is dropped (a ranking score needs none)."""
    w = w / w.sum()
    zm, ym = w @ Z, float(w @ y)
    Zc, yc = Z - zm, y - ym
    A = Zc.T @ (Zc * w[:, None]) + l2 * np.eye(Z.shape[1])
    return np.linalg.solve(A, Zc.T @ (w * yc))


def mlp_forward(params: Sequence[np.ndarray], Z: np.ndarray) -> np.ndarray:
    h = Z
    n = len(params) // 2
    for i in range(n):
        h = h @ params[2 * i] + params[2 * i + 1]
        if i < n - 1:
            h = np.maximum(h, 0.0)
    return h[:, 0]


def fit_mlp(ts: TrainSet, *, hidden=(72, 72), l2: float = 1e-4, lr: float = 1e-3, epochs: int = 30,
            batch: int = 1024, seed: int = 0) -> list[np.ndarray]:
    """NNEval's 2×72 ReLU network as a pairwise scorer, Adam (TF defaults), He init (numpy)."""
    rng = np.random.default_rng(seed)
    sizes = [ts.Z.shape[1], *hidden, 1]
    params: list[np.ndarray] = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        params += [np.sqrt(2.0 / a) * rng.standard_normal((a, b)), np.zeros(b)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    n = len(ts.pairs)
    p_sample = ts.pairs.weight / ts.pairs.weight.sum()
    steps = max(1, n // batch)
    k = 0
    for _ in range(epochs):
        for _ in range(steps):
            idx = rng.choice(n, size=batch, p=p_sample)
            Xa, Xb = ts.Z[ts.pairs.ia[idx]], ts.Z[ts.pairs.ib[idx]]
            t = ts.pairs.target[idx]
            grads = _mlp_pair_grads(params, Xa, Xb, t)
            k += 1
            for i, g in enumerate(grads):
                if i % 2 == 0:
                    g = g + l2 * params[i]
                m[i] = 0.9 * m[i] + 0.1 * g
                v[i] = 0.999 * v[i] + 0.001 * g * g
                mh = m[i] / (1 - 0.9 ** k)
                vh = v[i] / (1 - 0.999 ** k)
                params[i] = params[i] - lr * mh / (np.sqrt(vh) + 1e-8)
    return params


def _mlp_grads_one(params, X, dout):
    acts, pre = [X], []
    h = X
    n = len(params) // 2
    for i in range(n):
        z = h @ params[2 * i] + params[2 * i + 1]
        pre.append(z)
        h = np.maximum(z, 0.0) if i < n - 1 else z
        acts.append(h)
    grads = [None] * len(params)
    delta = dout[:, None]
    for i in reversed(range(n)):
        grads[2 * i] = acts[i].T @ delta
        grads[2 * i + 1] = delta.sum(axis=0)
        if i:
            delta = (delta @ params[2 * i].T) * (pre[i - 1] > 0)
    return grads


def _mlp_pair_grads(params, Xa, Xb, t):
    s = mlp_forward(params, Xa) - mlp_forward(params, Xb)
    g = (_sigmoid(s) - t) / len(t)
    ga = _mlp_grads_one(params, Xa, g)
    gb = _mlp_grads_one(params, Xb, -g)
    return [a + b for a, b in zip(ga, gb)]


def pointwise_targets(blocks: Sequence[tuple[str, Judgments]]) -> tuple[np.ndarray, np.ndarray]:
    """Per-unit targets in [0, 1] (rating percentile; preferred 1 / other 0) and weights."""
    from scipy.stats import rankdata

    ys, ws = [], []
    for _, j in blocks:
        if j.kind == "rating":
            y = (rankdata(j.ratings) - 0.5) / len(j)
        else:
            tot = np.zeros(len(j))
            cnt = np.zeros(len(j))
            np.add.at(tot, j.pairs[:, 0], 1.0 - j.labels)
            np.add.at(tot, j.pairs[:, 1], j.labels)
            np.add.at(cnt, j.pairs.ravel(), 1.0)
            y = np.where(cnt > 0, tot / np.maximum(cnt, 1), 0.5)
        ys.append(y)
        ws.append(np.full(len(j), 1.0 / len(j)))
    return np.concatenate(ys), np.concatenate(ws)


@dataclass
class HGBModel:
    """Experiment only (module docstring)."""

    model: object = field(repr=False)

    def predict(self, Z: np.ndarray) -> np.ndarray:
        return self.model.predict(Z)


def fit_hgb(Z: np.ndarray, y: np.ndarray, w: np.ndarray, *, monotone: np.ndarray | None = None,
            seed: int = 0) -> HGBModel:
    from sklearn.ensemble import HistGradientBoostingRegressor

    cst = None if monotone is None else [1 if m else 0 for m in monotone]
    model = HistGradientBoostingRegressor(max_iter=200, learning_rate=0.05, max_leaf_nodes=15,
                                          min_samples_leaf=50, l2_regularization=1.0, monotonic_cst=cst,
                                          random_state=seed)
    model.fit(Z, y, sample_weight=w * len(w))
    return HGBModel(model)
