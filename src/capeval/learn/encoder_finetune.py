"""A fine-tuned sentence encoder as a learned caption metric (experiment; nothing shipped).

The scorer is a bi-encoder: a unit (candidate + references) scores the cosine between the
candidate's sentence embedding and the normalised centroid of its references' embeddings
(mean-pooled last-layer states, L2-normalised) — exactly ``sentsim_centroid`` before any
training. Fine-tuning moves the encoder so that this cosine orders captions as people did.
Why a bi-encoder and not a cross-encoder: scoring is one encoder pass per distinct sentence
(Flickr8k-CF's 47,830 units need ~5,300 passes) instead of one per (candidate, reference)
pair (~215,000), which decides whether leave-one-benchmark-out with cross-fitting fits on CPU.
Why start from the cosine and add no head: a head fitted on top of frozen embedding products
overfitted the training benchmarks (``embprod``); starting at the strongest single metric means
a short fine-tune can only move it as far as the gradient signal carries.

Training signal (scale-free, like ``capeval.learn.ranker``): comparisons inside a batch.
A rating benchmark's batch holds a few images with several of their units each; every pair of
units in it whose mean ratings differ is one comparison (within and across images). A
preference benchmark's batch holds its human pairs (label 0.5 → target 0.5). Loss: logistic
loss on t · (s_a − s_b) with a learned temperature t. Benchmarks take turns batch by batch, so
each training benchmark gets the same number of steps whatever its size.

Units with more than ``max_refs`` references are scored against consecutive groups of at
most ``max_refs`` (``ranker_features.ref_groups``) and the group scores averaged. Training
compares each candidate with ``train_refs`` of its references (default one, drawn per image
or pair and shared by its units): a third of the encoder passes of a full group per step.

Pure computation: the caller passes a loaded (tokenizer, model) pair and the judgments.
torch is imported inside the functions.
"""
from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from .judgments import Judgments
from .ranker_features import ref_groups


@dataclass(frozen=True)
class FinetuneConfig:
    steps: int = 120  # optimiser steps in total (benchmarks take turns)
    batch_units: int = 32  # units per batch (rating benchmarks); pairs × 2 for preferences
    units_per_image: int = 8  # at most this many units of one image in a rating batch
    lr: float = 2e-5
    temperature_lr: float = 1e-2
    init_temperature: float = 20.0
    weight_decay: float = 0.01
    max_seq_len: int = 64
    max_refs: int = 5
    #: references per unit in a training batch (drawn once per image / pair and shared by its
    #: units, so they are encoded once); scoring always uses groups of ``max_refs``
    train_refs: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("steps", "batch_units", "units_per_image", "max_seq_len", "max_refs", "train_refs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"FinetuneConfig.{name} must be a positive integer, got {v!r}")
        if self.train_refs > self.max_refs:
            raise InputError(f"FinetuneConfig.train_refs ({self.train_refs}) exceeds max_refs ({self.max_refs})")
        if self.batch_units < 2:
            raise InputError("FinetuneConfig.batch_units must be at least 2 (a batch holds comparisons)")
        for name in ("lr", "temperature_lr", "init_temperature"):
            if not getattr(self, name) > 0:
                raise InputError(f"FinetuneConfig.{name} must be positive, got {getattr(self, name)!r}")


@dataclass
class Batch:
    """Units of one benchmark (candidate, one reference group) and comparisons between them."""

    benchmark: str
    candidates: list[str]
    references: list[list[str]]
    ia: np.ndarray
    ib: np.ndarray
    target: np.ndarray


@dataclass
class TrainResult:
    model: Any  # the fine-tuned encoder (eval mode)
    tokenizer: Any
    config: FinetuneConfig
    seconds: float
    losses: list[float] = field(default_factory=list)
    steps_per_benchmark: dict[str, int] = field(default_factory=dict)
    units_per_benchmark: dict[str, int] = field(default_factory=dict)

    def info(self) -> dict[str, Any]:
        n = len(self.losses)
        head = float(np.mean(self.losses[: max(1, n // 5)])) if n else None
        tail = float(np.mean(self.losses[-max(1, n // 5):])) if n else None
        return {"config": asdict(self.config), "train_seconds": round(self.seconds, 1),
                "steps_per_benchmark": self.steps_per_benchmark,
                "units_per_benchmark": self.units_per_benchmark,
                "loss_first_fifth": head, "loss_last_fifth": tail}


# ---- batches ---------------------------------------------------------------------------

def _pick(refs: Sequence[str], cfg: FinetuneConfig, draw: np.ndarray) -> list[str]:
    """``cfg.train_refs`` references of one unit, chosen by ``draw`` (random integers shared
    by the units of one image or pair): a group of ≤ ``max_refs`` first, then positions in it."""
    groups = [range(len(refs))] if len(refs) <= cfg.max_refs else ref_groups(len(refs), cfg.max_refs)
    g = list(groups[int(draw[0]) % len(groups)])
    if cfg.train_refs >= len(g):
        return [refs[k] for k in g]
    start = int(draw[1]) % len(g)
    return [refs[g[(start + k) % len(g)]] for k in range(cfg.train_refs)]


def _rating_batch(j: Judgments, by_image: list[np.ndarray], cfg: FinetuneConfig,
                  rng: np.random.Generator) -> Batch | None:
    units: list[int] = []
    draws: list[np.ndarray] = []
    for img in rng.permutation(len(by_image)):
        take = rng.permutation(by_image[img])[: cfg.units_per_image][: cfg.batch_units - len(units)]
        d = rng.integers(0, 1 << 30, size=2)
        units.extend(int(x) for x in take)
        draws.extend(d for _ in take)
        if len(units) >= cfg.batch_units:
            break
    u = np.asarray(units)
    r = np.asarray(j.ratings, dtype=float)[u]
    a, b = np.triu_indices(u.size, k=1)
    keep = r[a] != r[b]
    if not keep.any():
        return None
    a, b = a[keep], b[keep]
    return Batch(j.name, [j.candidates[i] for i in u], [_pick(j.references[i], cfg, d) for i, d in zip(u, draws)],
                 a, b, (r[a] > r[b]).astype(float))


def _preference_batch(j: Judgments, cfg: FinetuneConfig, rng: np.random.Generator) -> Batch:
    n = max(1, cfg.batch_units // 2)
    pick = rng.choice(len(j.pairs), size=min(n, len(j.pairs)), replace=False)
    cands: list[str] = []
    refs: list[list[str]] = []
    for p in pick:
        # a and b of a pair share their references; score both against the same group
        ua, ub = j.pairs[p]
        group = _pick(j.references[ua], cfg, rng.integers(0, 1 << 30, size=2))
        cands += [j.candidates[ua], j.candidates[ub]]
        refs += [group, group]
    k = np.arange(len(pick))
    return Batch(j.name, cands, refs, 2 * k, 2 * k + 1, 1.0 - np.asarray(j.labels, dtype=float)[pick])


def batches(train: Sequence[Judgments], cfg: FinetuneConfig) -> list[Batch]:
    """``cfg.steps`` batches, the training benchmarks taking turns (module docstring)."""
    if not train:
        raise InputError("no training benchmarks")
    rng = np.random.default_rng(cfg.seed)
    groups: dict[str, list[np.ndarray]] = {}
    for j in train:
        if len(j) == 0:
            raise InputError(f"{j.name}: no units to train on")
        if j.kind == "rating":
            if j.ratings is None or len(j.ratings) != len(j):
                raise InputError(f"{j.name}: rating judgments need one rating per unit")
            if np.unique(j.ratings).size < 2:
                raise InputError(f"{j.name}: every unit has the same rating; nothing to learn from")
            by: dict[str, list[int]] = {}
            for i, img in enumerate(j.images):
                by.setdefault(img, []).append(i)
            groups[j.name] = [np.asarray(v) for v in by.values()]
        elif j.kind == "preference":
            if j.pairs is None or len(j.pairs) == 0:
                raise InputError(f"{j.name}: preference judgments without pairs")
        else:
            raise InputError(f"{j.name}: unknown judgment kind {j.kind!r}")
    out: list[Batch] = []
    tries = 0
    while len(out) < cfg.steps:
        j = train[len(out) % len(train)]
        b = _rating_batch(j, groups[j.name], cfg, rng) if j.kind == "rating" else _preference_batch(j, cfg, rng)
        tries += 1
        if b is not None:
            out.append(b)
        elif tries > 20 * cfg.steps:
            raise InputError(f"{j.name}: could not draw batches with differing ratings")
    return out


# ---- encoder ---------------------------------------------------------------------------

def _encode(tokenizer, model, sentences: Sequence[str], max_seq_len: int):
    """L2-normalised mean-pooled last-layer states (torch, keeps the graph in training)."""
    import torch

    enc = tokenizer(list(sentences), padding=True, truncation=True, max_length=max_seq_len, return_tensors="pt")
    h = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
    m = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
    pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=-1)


def _batch_scores(tokenizer, model, cands: Sequence[str], refs: Sequence[Sequence[str]], max_seq_len: int):
    """Cosine of each candidate with its references' normalised centroid; each distinct
    sentence of the batch is encoded once."""
    import torch

    distinct = list(dict.fromkeys([*cands, *(r for rs in refs for r in rs)]))
    where = {s: i for i, s in enumerate(distinct)}
    E = _encode(tokenizer, model, distinct, max_seq_len)
    c = E[[where[s] for s in cands]]
    owner = torch.tensor([i for i, rs in enumerate(refs) for _ in rs])
    R = E[[where[r] for rs in refs for r in rs]]
    cent = torch.zeros(len(cands), E.shape[1], dtype=E.dtype).index_add_(0, owner, R)
    cent = torch.nn.functional.normalize(cent, dim=-1)
    return (c * cent).sum(-1)


def train(tokenizer, base_model, judgments: Sequence[Judgments], cfg: FinetuneConfig = FinetuneConfig(),
          progress=None) -> TrainResult:
    """Fine-tune a copy of ``base_model`` on ``judgments`` (module docstring); the base model is
    left untouched."""
    import torch

    torch.manual_seed(cfg.seed)
    model = copy.deepcopy(base_model)
    model.train()
    log_t = torch.nn.Parameter(torch.tensor(float(np.log(cfg.init_temperature))))
    opt = torch.optim.AdamW([{"params": [p for p in model.parameters() if p.requires_grad], "lr": cfg.lr,
                              "weight_decay": cfg.weight_decay},
                             {"params": [log_t], "lr": cfg.temperature_lr, "weight_decay": 0.0}])
    plan = batches(judgments, cfg)
    result = TrainResult(model, tokenizer, cfg, 0.0,
                         units_per_benchmark={j.name: len(j) for j in judgments})
    t0 = time.process_time()
    for step, b in enumerate(plan):
        s = _batch_scores(tokenizer, model, b.candidates, b.references, cfg.max_seq_len)
        diff = torch.exp(log_t) * (s[torch.as_tensor(b.ia)] - s[torch.as_tensor(b.ib)])
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            diff, torch.as_tensor(b.target, dtype=diff.dtype))
        opt.zero_grad()
        loss.backward()
        opt.step()
        result.losses.append(float(loss.detach()))
        result.steps_per_benchmark[b.benchmark] = result.steps_per_benchmark.get(b.benchmark, 0) + 1
        if progress is not None and (step + 1) % 20 == 0:
            progress(f"step {step + 1}/{len(plan)} loss {np.mean(result.losses[-20:]):.4f} "
                     f"t {float(torch.exp(log_t.detach())):.2f} cpu {time.process_time() - t0:.0f}s")
    model.eval()
    result.seconds = time.process_time() - t0
    return result


def embed(tokenizer, model, sentences: Sequence[str], *, max_seq_len: int = 64, batch_size: int = 128) -> np.ndarray:
    """Normalised sentence embeddings (float64, input order), length-sorted batches."""
    import torch

    sentences = list(sentences)
    order = np.argsort([len(s) for s in sentences], kind="stable")
    out = None
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            E = _encode(tokenizer, model, [sentences[i] for i in idx], max_seq_len).double().numpy()
            if out is None:
                out = np.zeros((len(sentences), E.shape[1]))
            out[idx] = E
    return out if out is not None else np.zeros((0, 0))


def score(tokenizer, model, candidates: Sequence[str], references: Sequence[Sequence[str]], *,
          max_refs: int = 5, max_seq_len: int = 64) -> np.ndarray:
    """One score per unit: centroid cosine, averaged over reference groups of ≤ ``max_refs``."""
    if len(candidates) != len(references):
        raise InputError(f"{len(candidates)} candidates but {len(references)} reference lists")
    for i, rs in enumerate(references):
        if len(rs) == 0:
            raise InputError(f"unit {i} has no references")
    if not len(candidates):
        return np.zeros(0)
    distinct = list(dict.fromkeys([*candidates, *(r for rs in references for r in rs)]))
    where = {s: i for i, s in enumerate(distinct)}
    E = embed(tokenizer, model, distinct, max_seq_len=max_seq_len)
    out = np.empty(len(candidates))
    for i, (c, rs) in enumerate(zip(candidates, references)):
        groups = [range(len(rs))] if len(rs) <= max_refs else ref_groups(len(rs), max_refs)
        vals = []
        for g in groups:
            cent = E[[where[rs[k]] for k in g]].mean(axis=0)
            nrm = np.linalg.norm(cent)
            vals.append(float(E[where[c]] @ cent / nrm) if nrm > 0 else 0.0)
        out[i] = np.mean(vals)
    return out
