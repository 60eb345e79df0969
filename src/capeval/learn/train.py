"""Train a learned metric end to end: rows → features (cached) → fit → :class:`LearnedModel`.

Validation (model selection) protocols:

- ``expert``: early stopping on Kendall τ-c against Flickr8k-Expert, the NNEval paper's
  protocol. Flickr8k-Expert numbers of such a model are selected on that set: optimistic.
- ``split``: early stopping on Kendall τ-b between P(human) and the human/machine label on
  10% of the training images (whole images held out). No evaluation data is touched, so
  every benchmark number of the model is clean.
- ``none``: train for ``max_epochs`` and keep the last epoch.

Every model records ``meta["trained_on"]`` (the benchmarks whose data it was fitted on, e.g.
``["tanti-coco"]``), ``meta["selected_on"]`` (the benchmarks used for early stopping or λ,
e.g. ``["flickr8k-expert"]``) and ``meta["training_images"]`` (canonical image ids), so a
benchmark run can tell when a learned model is evaluated on data it saw.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._version import __version__
from ..errors import InputError
from .builder import TrainingSet, split_by_image
from .configs import LCEVAL_CONFIG, NNEVAL_CONFIG
from .features import Feature, MinMax, extract, label, parse_features
from .mlp import TrainConfig, train
from .model import LearnedModel
from .refsets import DEFAULT_K, POLICIES

VALIDATIONS = ("expert", "split", "none")
SPLIT_FRACTION = 0.1


@dataclass(frozen=True)
class Recipe:
    """What distinguishes NNEval, LCEval-style and the linear baseline."""

    name: str
    kind: str  # "mlp" | "linear"
    features: tuple[Feature, ...]
    config: TrainConfig
    refs: str = "all"  # reference policy (capeval.learn.refsets), at training and at use
    max_refs: int = DEFAULT_K
    clip: bool = True  # clip features to the training range at use (and in validation)


def _kendall(statistic: str):
    from scipy import stats

    variant = "c" if statistic == "kendall_tau_c" else "b"

    def tau(scores: np.ndarray, target: np.ndarray) -> float:
        if np.all(scores == scores[0]):
            return float("-inf")  # a constant scorer ranks nothing: never the best epoch
        return float(stats.kendalltau(scores, target, variant=variant).statistic)

    return tau


def _training_digest(ts: TrainingSet) -> str:
    import hashlib

    from ..service.cache import corpus_digest

    h = hashlib.sha256(corpus_digest(ts.candidates, ts.references).encode())
    h.update(np.asarray(ts.labels, dtype=np.int64).tobytes())
    return h.hexdigest()


def train_recipe(
    recipe: Recipe,
    training: TrainingSet,
    *,
    validation: str = "expert",
    root=None,
    cache=None,
    tokenizer: str = "ptb",
    progress: Callable[[str], None] | None = None,
) -> LearnedModel:
    """Fit ``recipe`` on ``training``; ``validation`` as in the module docstring."""
    if validation not in VALIDATIONS:
        raise InputError(f"unknown validation {validation!r}; one of {', '.join(VALIDATIONS)}")
    say = progress or (lambda msg: None)
    say(f"features for {len(training)} training rows")
    fm = extract(training.candidates, training.references, recipe.features, tokenizer=tokenizer, cache=cache,
                 progress=say, refs=recipe.refs, max_refs=recipe.max_refs)
    X, y = fm.X, training.labels
    rows = np.arange(len(training))
    validate = None
    val_info: dict[str, Any] = {"protocol": validation}
    if validation == "split":
        rows, val_rows = split_by_image(training.images, SPLIT_FRACTION, recipe.config.seed)
        val_info.update(statistic="kendall_tau_b", target="human-machine-label", fraction=SPLIT_FRACTION,
                        rows=int(len(val_rows)))
        scaler = MinMax.fit(X[rows])
        Zv, yv = scaler.transform(X[val_rows], clip=recipe.clip), y[val_rows].astype(float)
        tau = _kendall("kendall_tau_b")
        validate = lambda f: tau(f(Zv), yv)  # noqa: E731
    else:
        scaler = MinMax.fit(X)
    if validation == "expert":
        from .. import data

        table = data.load("flickr8k-expert", root)
        say("features for Flickr8k-Expert (validation)")
        vm = extract(table.candidates, table.references, recipe.features, tokenizer=tokenizer, cache=cache,
                     progress=say, refs=recipe.refs, max_refs=recipe.max_refs)
        Zv, hv = scaler.transform(vm.X, clip=recipe.clip), table.human
        tau = _kendall("kendall_tau_c")
        validate = lambda f: tau(f(Zv), hv)  # noqa: E731
        val_info.update(statistic="kendall_tau_c", target="flickr8k-expert", rows=len(table),
                        protocol_fields=dict(table.protocol))
    Z = scaler.transform(X[rows])
    say(f"fitting {recipe.name} on {len(rows)} rows")
    if recipe.kind == "mlp":
        params, log = train(Z, y[rows], recipe.config, validate)
        val_info.update(best_epoch=log.best_epoch, best_score=log.best_score, epochs_run=log.epochs_run,
                        history=[[e, loss, s] for e, loss, s in log.history])
    else:
        from .linear import fit_linear

        w, b, lam, history = fit_linear(Z, y[rows], validate)
        params = [w, b]
        val_info.update(ridge_lambda=lam, history=[[lm, s] for lm, s in history])
    meta = {
        "name": recipe.name,
        "capeval": __version__,
        "config": recipe.config.as_dict() if recipe.kind == "mlp" else {"solver": "ridge-closed-form"},
        "training": {**training.info, "rows_fit": int(len(rows)), "digest": _training_digest(training)},
        "validation": val_info,
        "feature_signatures": {label(f): fm.signatures[label(f)] for f in recipe.features},
        "refs": recipe.refs,
        "max_refs": recipe.max_refs,
        "clip": recipe.clip,
        "trained_on": trained_on(training),
        "selected_on": {"expert": ["flickr8k-expert"], "split": trained_on(training), "none": []}[validation],
        "training_images": sorted(set(training.images)),
    }
    if training.info.get("negatives"):
        # synthetic machine rows (builder negatives=...); absent for the paper's recipe, whose
        # files so keep their bytes
        meta["negatives"] = list(training.info["negatives"])
    return LearnedModel(recipe.kind, params, scaler, recipe.features, tokenizer, meta)


def trained_on(training: TrainingSet) -> list[str]:
    """Benchmark names whose captions the rows come from: the Tanti system tables of the
    datasets with at least one training image; a hand-made set may state ``info["trained_on"]``,
    and says ``["unknown"]`` otherwise (never an empty list, which would read as "clean")."""
    if "trained_on" in training.info:
        return list(training.info["trained_on"])
    per_ds = training.info.get("images_by_dataset")
    if per_ds is None:
        return ["unknown"]
    return [f"tanti-{ds}" for ds in sorted(per_ds) if per_ds[ds]]


def make_recipe(name: str, *, features: str | Sequence[str] | None = None, seed: int = 0,
                refs: str = "all", max_refs: int = DEFAULT_K, clip: bool = True, **config: Any) -> Recipe:
    """``nneval`` (8→72→72→2), ``lceval`` (softmax regression, LCEval's features, lr 5e-4) or
    ``linear`` (ridge); ``features`` overrides the recipe's list; ``refs``/``max_refs`` set the
    reference policy (:mod:`capeval.learn.refsets`), ``clip`` whether features are clipped to
    the training range; ``config`` overrides :class:`TrainConfig` fields."""
    presets = {"nneval": ("mlp", "nneval", NNEVAL_CONFIG), "lceval": ("mlp", "lceval", LCEVAL_CONFIG),
               "linear": ("linear", "nneval", NNEVAL_CONFIG)}
    if name not in presets:
        raise InputError(f"unknown learned model {name!r}; one of {', '.join(presets)}")
    kind, default_features, cfg = presets[name]
    unknown = set(config) - set(TrainConfig.__dataclass_fields__)
    if unknown:
        raise InputError(f"unknown training option(s) {', '.join(sorted(unknown))}")
    if refs not in POLICIES:
        raise InputError(f"unknown reference policy {refs!r}; one of {', '.join(POLICIES)}")
    cfg = replace(cfg, seed=seed, **config)
    return Recipe(name, kind, parse_features(features or default_features), cfg, refs, int(max_refs), bool(clip))
