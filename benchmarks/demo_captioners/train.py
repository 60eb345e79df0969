"""Training for the demonstration captioners (METHODS.md §2.2), with a wall-clock cap.

Loss: mean over every batch × time position of cross-entropy × token mask (padding counts in
the denominator) + l2_weight · Σw²/2. Adam, lr 0.001. Early stopping on the validation log
geometric-mean perplexity of each validation image's first caption, checked after every epoch
(epoch 0 is a pass before training): stop at the first epoch that is worse than the previous
one and restore the best parameters.
"""
from __future__ import annotations

import copy
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .vocab import EDGE_INDEX


@dataclass
class TrainLog:
    epochs_run: int = 0
    best_epoch: int = 0
    val_log_pplx: list[float] = field(default_factory=list)
    seconds: float = 0.0
    stopped_by: str = ""
    snapshots: dict[int, dict] = field(default_factory=dict)


def _pad(seqs: Sequence[Sequence[int]]):
    """(inputs = [EDG] + c, targets = c + [EDG], mask) padded to the longest."""
    T = max(len(s) for s in seqs) + 1
    inputs = torch.zeros((len(seqs), T), dtype=torch.int64)
    targets = torch.zeros((len(seqs), T), dtype=torch.int64)
    mask = torch.zeros((len(seqs), T), dtype=torch.float32)
    for b, s in enumerate(seqs):
        inputs[b, 0] = EDGE_INDEX
        inputs[b, 1 : len(s) + 1] = torch.as_tensor(s)
        targets[b, : len(s)] = torch.as_tensor(s)
        targets[b, len(s)] = EDGE_INDEX
        mask[b, : len(s) + 1] = 1.0
    return inputs, targets, mask


@torch.inference_mode()
def validation_log_pplx(model, images: torch.Tensor, captions: Sequence[Sequence[int]], batch: int = 400) -> float:
    """Mean over captions of log2 perplexity; infinite ones add nothing but count."""
    model.eval()
    total = 0.0
    for lo in range(0, len(captions), batch):
        inputs, targets, mask = _pad(captions[lo : lo + batch])
        logits = model(images[lo : lo + batch], inputs)
        lp = torch.log_softmax(logits.float(), dim=2)
        tok = torch.gather(lp, 2, targets[:, :, None])[:, :, 0] / math.log(2.0)
        per_cap = -(tok * mask).sum(1) / mask.sum(1)
        finite = torch.isfinite(per_cap)
        total += float(per_cap[finite].sum())
    return total / len(captions)


def train(
    model,
    images: torch.Tensor,
    captions: Sequence[Sequence[int]],
    image_of_caption: Sequence[int],
    val_images: torch.Tensor,
    val_captions: Sequence[Sequence[int]],
    *,
    max_epochs: int = 100,
    max_seconds: float | None = None,
    lr: float = 1e-3,
    seed: int = 0,
    keep_snapshots: bool = False,
    snapshot_every: int | None = None,
) -> TrainLog:
    """Train in place; returns the log. ``max_seconds`` stops between batches.

    ``keep_snapshots`` stores the parameters after every epoch (keyed by epoch); with
    ``snapshot_every`` = k they are stored every k batches instead (keyed by batch count),
    which gives several models of graded quality from one short training run.
    """
    torch.manual_seed(seed)  # dropout masks
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    hp = model.hp
    log = TrainLog()
    start = time.perf_counter()
    best = validation_log_pplx(model, val_images, val_captions)
    log.val_log_pplx.append(best)
    best_state = copy.deepcopy(model.state_dict())
    image_of_caption = np.asarray(image_of_caption)
    lengths = np.array([len(c) for c in captions])
    prev = best
    step = 0
    for epoch in range(1, max_epochs + 1):
        model.train()
        # Batches of similar length waste less time on padding; their order is shuffled.
        order = np.argsort(lengths + rng.uniform(0, 1, len(lengths)), kind="stable")
        batches = [order[i : i + hp.batch_size] for i in range(0, len(order), hp.batch_size)]
        rng.shuffle(batches)
        out_of_time = False
        for idx in batches:
            if max_seconds is not None and time.perf_counter() - start > max_seconds:
                out_of_time = True
                break
            inputs, targets, mask = _pad([captions[i] for i in idx])
            feats = images[torch.as_tensor(image_of_caption[idx])]
            logits = model(feats, inputs)
            ce = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none"
            )
            loss = (ce * mask.reshape(-1)).mean()
            if hp.l2_weight:
                loss = loss + hp.l2_weight * model.l2_penalty()
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if snapshot_every and step % snapshot_every == 0:
                log.snapshots[step] = copy.deepcopy(model.state_dict())
        val = validation_log_pplx(model, val_images, val_captions)
        log.val_log_pplx.append(val)
        log.epochs_run = epoch
        if keep_snapshots and not snapshot_every:
            log.snapshots[epoch] = copy.deepcopy(model.state_dict())
        if val < best:
            best = val
            best_state = copy.deepcopy(model.state_dict())
            log.best_epoch = epoch
        if out_of_time:
            log.stopped_by = "time"
            break
        if val > prev:
            log.stopped_by = "early-stopping"
            break
        prev = val
    else:
        log.stopped_by = "max-epochs"
    model.load_state_dict(best_state)
    model.eval()
    log.seconds = time.perf_counter() - start
    return log
