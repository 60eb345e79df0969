"""A small softmax network in numpy: ReLU hidden layers, 2-way softmax, Adam, L2.

NNEval is 8 → 72 → 72 → 2; LCEval is the same with no hidden layer (softmax regression;
docs/NNEVAL.md, Model and training). numpy instead of a deep-learning framework: the network has
~6k parameters and trains in seconds on a CPU, float64 numpy with a seeded Generator gives
the same weights on every run, and capeval gains no dependency.

Conventions follow the TensorFlow originals: W = √(2/fan_in)·N(0, 1), biases 0; loss = mean
softmax cross-entropy + λ·Σ ½‖W‖² over weight matrices (``tf.nn.l2_loss``, biases exempt);
Adam with TF's defaults (β₁ 0.9, β₂ 0.999, ε 1e-8). The score is P(class 1) = P(human).
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError


def init_params(n_in: int, hidden: Sequence[int], rng: np.random.Generator, n_out: int = 2) -> list[np.ndarray]:
    """[W1, b1, ..., W_out, b_out] with He-normal weights and zero biases."""
    sizes = [n_in, *hidden, n_out]
    params: list[np.ndarray] = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        params.append(np.sqrt(2.0 / fan_in) * rng.standard_normal((fan_in, fan_out)))
        params.append(np.zeros(fan_out))
    return params


def logits(params: Sequence[np.ndarray], X: np.ndarray) -> np.ndarray:
    h = X
    n_layers = len(params) // 2
    for i in range(n_layers):
        h = h @ params[2 * i] + params[2 * i + 1]
        if i < n_layers - 1:
            h = np.maximum(h, 0.0)
    return h


def p_class1(params: Sequence[np.ndarray], X: np.ndarray) -> np.ndarray:
    """P(class 1) by matrix products: training's form (its validation picks the epoch with
    it, so the shipped weights depend on it). Its last bits depend on the batch; scoring uses
    :func:`p_class1_rows`."""
    return _class1(logits(params, X))


def p_class1_rows(params: Sequence[np.ndarray], X: np.ndarray) -> np.ndarray:
    """P(class 1) of each row from that row alone (``capeval.learn.rowlocal``): what a model
    scores with, the same bits in any batch."""
    from .rowlocal import forward

    return _class1(forward(params, X))


def _class1(z: np.ndarray) -> np.ndarray:
    # softmax over two classes = logistic of the logit difference (stable for large |z|);
    # elementwise, so row-local
    d = z[:, 1] - z[:, 0]
    out = np.empty_like(d)
    pos = d >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-d[pos]))
    e = np.exp(d[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def loss_and_grads(params: Sequence[np.ndarray], X: np.ndarray, y: np.ndarray, l2: float
                   ) -> tuple[float, list[np.ndarray]]:
    n_layers = len(params) // 2
    acts = [X]
    pre = []
    h = X
    for i in range(n_layers):
        z = h @ params[2 * i] + params[2 * i + 1]
        pre.append(z)
        h = np.maximum(z, 0.0) if i < n_layers - 1 else z
        acts.append(h)
    z = acts[-1]
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    n = X.shape[0]
    ce = -float(np.mean(logp[np.arange(n), y]))
    reg = 0.5 * l2 * sum(float(np.sum(params[2 * i] ** 2)) for i in range(n_layers))
    delta = np.exp(logp)
    delta[np.arange(n), y] -= 1.0
    delta /= n
    grads: list[np.ndarray] = [None] * len(params)  # type: ignore[list-item]
    for i in reversed(range(n_layers)):
        grads[2 * i] = acts[i].T @ delta + l2 * params[2 * i]
        grads[2 * i + 1] = delta.sum(axis=0)
        if i > 0:
            delta = (delta @ params[2 * i].T) * (pre[i - 1] > 0)
    return ce + reg, grads


@dataclass
class Adam:
    lr: float
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    t: int = 0
    m: list[np.ndarray] = field(default_factory=list)
    v: list[np.ndarray] = field(default_factory=list)

    def step(self, params: list[np.ndarray], grads: Sequence[np.ndarray], lr: float) -> None:
        if not self.m:
            self.m = [np.zeros_like(p) for p in params]
            self.v = [np.zeros_like(p) for p in params]
        self.t += 1
        # TF's form: the bias corrections fold into the step size, ε is added to √v unscaled.
        lr_t = lr * np.sqrt(1 - self.beta2 ** self.t) / (1 - self.beta1 ** self.t)
        for p, g, m, v in zip(params, grads, self.m, self.v):
            m *= self.beta1
            m += (1 - self.beta1) * g
            v *= self.beta2
            v += (1 - self.beta2) * g * g
            p -= lr_t * m / (np.sqrt(v) + self.eps)


def project_monotone(params: list[np.ndarray]) -> None:
    """In place: hidden weights ≥ 0 and output weights with w[:, 1] ≥ w[:, 0], so the logit
    difference (and P(class 1)) never falls when a feature rises. ReLU is non-decreasing, so
    non-negative weights keep every hidden unit non-decreasing in every input."""
    n_layers = len(params) // 2
    for i in range(n_layers - 1):
        np.maximum(params[2 * i], 0.0, out=params[2 * i])
    w = params[2 * (n_layers - 1)]
    bad = w[:, 1] < w[:, 0]
    mid = 0.5 * (w[bad, 0] + w[bad, 1])
    w[bad, 0] = mid
    w[bad, 1] = mid


@dataclass(frozen=True)
class TrainConfig:
    hidden: tuple[int, ...] = (72, 72)
    l2: float = 1e-4
    lr: float = 1e-3
    lr_decay: float = 0.5  # multiply the learning rate by this ...
    decay_every: int = 10  # ... every this many epochs
    batch_size: int = 256
    max_epochs: int = 100
    patience: int = 15  # epochs without a better validation score before stopping
    seed: int = 0
    #: Not in the paper: keep P(class 1) non-decreasing in every feature (projected weights).
    monotone: bool = False

    def as_dict(self) -> dict:
        d = {"hidden": list(self.hidden), "l2": self.l2, "lr": self.lr, "lr_decay": self.lr_decay,
             "decay_every": self.decay_every, "batch_size": self.batch_size, "max_epochs": self.max_epochs,
             "patience": self.patience, "seed": self.seed}
        if self.monotone:  # only when set, so the paper-recipe files keep their bytes
            d["monotone"] = True
        return d


@dataclass
class TrainLog:
    best_epoch: int
    best_score: float
    epochs_run: int
    history: list[tuple[int, float, float]]  # (epoch, mean training loss, validation score)


def _one_blas_thread():
    """Matrices here are at most 256×72: a threaded BLAS spends far more time waking and
    syncing threads than multiplying (30× slower on 2 busy cores, measured)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: only speed depends on it, never the numbers
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def train(X: np.ndarray, y: np.ndarray, config: TrainConfig,
          validate: Callable[[Callable[[np.ndarray], np.ndarray]], float] | None = None
          ) -> tuple[list[np.ndarray], TrainLog]:
    """Mini-batch Adam; keep the parameters of the epoch with the best ``validate`` score.

    ``validate(score_fn)`` gets a function from normalised features to P(class 1) and returns
    a number to maximise (e.g. Kendall τ with human ratings). Without it, the last epoch wins.
    """
    with _one_blas_thread():
        return _train(X, y, config, validate)


def _train(X, y, config, validate):
    X = np.ascontiguousarray(X, dtype=float)
    y = np.asarray(y, dtype=np.int64)
    if X.ndim != 2 or X.shape[0] != y.shape[0] or X.shape[0] == 0:
        raise InputError(f"training features {X.shape} and labels {y.shape} do not line up")
    if not set(np.unique(y).tolist()) <= {0, 1}:
        raise InputError(f"labels must be 0 (machine) or 1 (human), got {sorted(set(np.unique(y).tolist()))}")
    rng = np.random.default_rng(config.seed)
    params = init_params(X.shape[1], config.hidden, rng)
    if config.monotone:
        project_monotone(params)
    opt = Adam(config.lr)
    best = (-np.inf, 0, [p.copy() for p in params])
    history = []
    n = X.shape[0]
    since_best = 0
    epoch = 0
    for epoch in range(1, config.max_epochs + 1):
        lr = config.lr * config.lr_decay ** ((epoch - 1) // config.decay_every)
        order = rng.permutation(n)
        total = 0.0
        for start in range(0, n, config.batch_size):
            idx = order[start:start + config.batch_size]
            loss, grads = loss_and_grads(params, X[idx], y[idx], config.l2)
            opt.step(params, grads, lr)
            if config.monotone:
                project_monotone(params)
            total += loss * len(idx)
        score = float(validate(lambda Z: p_class1(params, Z))) if validate is not None else float(epoch)
        history.append((epoch, total / n, score))
        if score > best[0]:
            best = (score, epoch, [p.copy() for p in params])
            since_best = 0
        else:
            since_best += 1
            if since_best >= config.patience:
                break
    return best[2], TrainLog(best[1], best[0], epoch, history)
