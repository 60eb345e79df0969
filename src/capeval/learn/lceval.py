"""LCEval-style model (Sharif et al., ACL-SRW 2018): softmax regression, softmax(x·W + b) with
two classes, on LCEval's features that capeval computes (docs/NNEVAL.md). Adam at lr 5e-4 as in
LCEval's configuration; L2 1e-4 on W. Score = P(human).
"""
from __future__ import annotations

from .mlp import TrainConfig

LCEVAL_CONFIG = TrainConfig(hidden=(), l2=1e-4, lr=5e-4, lr_decay=1.0, decay_every=1,
                            batch_size=256, max_epochs=100, patience=15, seed=0)
