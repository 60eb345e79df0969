"""Training configurations of the two fixed-recipe models, and where the shipped NNEval model is.

NNEval (Sharif et al., ECCV 2018): an 8 → 72 → 72 → 2 ReLU network telling human captions from
machine captions by their metric scores; the metric is P(human) (docs/NNEVAL.md). The paper's
network, loss, initialisation and optimiser are kept (``capeval.learn.mlp``). Its learning rate
is not published, and its schedule (batch 6,650, ×0.5 every 3 epochs) was set for 133k rows;
with our ≈18k rows we use batch 256, lr 1e-3, ×0.5 every 10 epochs and early stopping (patience
15). docs/NNEVAL.md lists every difference from the paper.

LCEval-style model (Sharif et al., ACL-SRW 2018): softmax regression, softmax(x·W + b) with two
classes, on LCEval's features that capeval computes (docs/NNEVAL.md). Adam at lr 5e-4 as in
LCEval's configuration; L2 1e-4 on W. Score = P(human).
"""
from __future__ import annotations

from .mlp import TrainConfig

NNEVAL_CONFIG = TrainConfig(hidden=(72, 72), l2=1e-4, lr=1e-3, lr_decay=0.5, decay_every=10,
                            batch_size=256, max_epochs=100, patience=15, seed=0)

LCEVAL_CONFIG = TrainConfig(hidden=(), l2=1e-4, lr=5e-4, lr_decay=1.0, decay_every=1,
                            batch_size=256, max_epochs=100, patience=15, seed=0)

#: Where the shipped NNEval model lives, relative to this package.
DEFAULT_MODEL = "weights/nneval-default.npz"


def default_model_path():
    from pathlib import Path

    return Path(__file__).parent / DEFAULT_MODEL
