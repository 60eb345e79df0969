"""Training ``learned`` models on human judgments and the leave-one-benchmark-out protocol.

``leave_one_out`` holds each benchmark out in turn: the model is trained on the others, after
removing every training unit that shares an image or a candidate text with the held-out
benchmark (:func:`training_blocks`, through :func:`capeval.learn.judgments.overlap_mask`), and
is scored on the held-out one with that benchmark's own statistic — beside every single metric
computed in the same run.
Pure computation: the caller supplies feature matrices (``ranker_features.compute``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from . import ranker
from .features import Feature, label
from .judgments import EVALUATION_SETS, JUDGMENT_BENCHMARKS, TRAINING_ONLY, Judgments, overlap_mask
from .ranker_features import TEXT_FEATURES
from .ranker_model import RankerModel

KINDS = ("linear", "pairwise_ls", "ridge", "mlp", "hgb")


@dataclass
class Block:
    """One benchmark's judgments and its raw feature matrix (rows = units)."""

    judgments: Judgments
    X: np.ndarray
    #: feature label -> metric signature (recorded in model files)
    signatures: dict[str, str] | None = None

    def with_columns(self, cols: Sequence[int]) -> "Block":
        """The same units with only these feature columns (a recipe's)."""
        return Block(self.judgments, self.X[:, list(cols)], self.signatures)

    def subset(self, keep: np.ndarray) -> "Block":
        j = self.judgments
        idx = np.flatnonzero(keep)
        new = -np.ones(len(j), dtype=int)
        new[idx] = np.arange(idx.size)
        sub = Judgments(j.name, j.kind, [j.candidates[i] for i in idx], [j.references[i] for i in idx],
                        [j.images[i] for i in idx],
                        image_files=None if j.image_files is None else [j.image_files[i] for i in idx])
        if j.kind == "rating":
            sub.ratings = j.ratings[idx]
            if j.table is not None and j.unit_of_row is not None:
                rows = np.flatnonzero(keep[j.unit_of_row])
                sub.table = _table_rows(j.table, rows)
                sub.unit_of_row = new[j.unit_of_row[rows]]
        else:
            ok = keep[j.pairs].all(axis=1)
            sub.pairs, sub.labels = new[j.pairs[ok]], j.labels[ok]
            if j.table is not None and len(j.table.labels) == len(j.pairs):
                sub.table = _table_rows(j.table, np.flatnonzero(ok))
        return Block(sub, self.X[idx], self.signatures)


def _table_rows(table, rows: np.ndarray):
    """The benchmark table restricted to ``rows`` (per-row extras dropped), so a benchmark
    left with fewer units after overlap removal can still be evaluated (nested selection)."""
    from dataclasses import fields, replace

    per_row = {f.name: getattr(table, f.name) for f in fields(table)
               if f.name not in ("name", "statistic", "protocol", "extra")}
    # A per-row field may be absent (None): a table without image names or references.
    picked = {k: (v[rows] if isinstance(v, np.ndarray) else [v[i] for i in rows]) for k, v in per_row.items()
              if v is not None}
    return replace(table, **picked, extra={})


def monotone_mask(features: Sequence[Feature]) -> np.ndarray:
    """Metric features must not lower the score when they rise; text features are free."""
    return np.array([f.metric not in TEXT_FEATURES for f in features], dtype=bool)


# ---- evaluation ------------------------------------------------------------------------

def statistic_of(j: Judgments) -> str:
    known = {**JUDGMENT_BENCHMARKS, **EVALUATION_SETS}
    return known.get(j.name, "kendall_tau_c" if j.kind == "rating" else "accuracy")


def row_scores(j: Judgments, unit_scores: np.ndarray) -> np.ndarray:
    """Unit scores laid out as the benchmark table's rows (ratings) or a-then-b (pairs)."""
    s = np.asarray(unit_scores, dtype=float)
    if j.kind == "rating":
        return s[j.unit_of_row]
    return np.concatenate([s[j.pairs[:, 0]], s[j.pairs[:, 1]]])


def headline(j: Judgments, unit_scores: np.ndarray) -> float:
    """The benchmark's headline number for these unit scores (τ, or mean accuracy in %)."""
    from ..stats.correlation import correlate
    from ..stats.pairwise import pairwise_accuracy

    if j.table is None:
        raise InputError(f"{j.name}: judgments without their table cannot be evaluated")
    s = row_scores(j, unit_scores)
    if j.kind == "rating":
        return float(correlate(s, j.table.human, statistic_of(j)).value)
    n = len(j.pairs)
    acc = pairwise_accuracy(s[:n], s[n:], j.table.labels, j.table.categories, tie_policy="half")
    return float(acc.percent()["mean"])


def compare(j: Judgments, a: np.ndarray, b: np.ndarray, *, n_resamples: int = 1000, seed: int = 12345,
            names=("a", "b")) -> dict[str, Any]:
    """Paired bootstrap of the headline statistic (and Williams on Pearson for ratings)."""
    from ..stats.bootstrap import paired_bootstrap_correlation
    from ..stats.pairwise import paired_bootstrap_accuracy, pairwise_accuracy
    from ..stats.williams import williams_from_scores

    sa, sb = row_scores(j, a), row_scores(j, b)
    if j.kind == "rating":
        pb = paired_bootstrap_correlation(sa, sb, j.table.human, statistic_of(j), n_resamples=n_resamples,
                                          seed=seed, names=names)
        w = williams_from_scores(j.table.human, sa, sb, names=names)
        return {"bootstrap_delta": pb.delta, "bootstrap_ci": [pb.low, pb.high], "bootstrap_p": pb.p_value,
                "williams_t": w.t, "williams_p_one_sided": w.p_value, "pearson": [w.r12, w.r13]}
    n = len(j.pairs)
    acc_a = pairwise_accuracy(sa[:n], sa[n:], j.table.labels, j.table.categories, tie_policy="half")
    acc_b = pairwise_accuracy(sb[:n], sb[n:], j.table.labels, j.table.categories, tie_policy="half")
    pb = paired_bootstrap_accuracy(acc_a, acc_b, n_resamples=n_resamples, seed=seed)
    return {"bootstrap_delta": 100 * pb.delta, "bootstrap_ci": [100 * pb.low, 100 * pb.high],
            "bootstrap_p": pb.p_value}


# ---- training --------------------------------------------------------------------------

DEFAULT_HYPER: dict[str, dict[str, Any]] = {
    "linear": {"l2": 1e-3},
    "pairwise_ls": {"l2": 1e-3},
    "ridge": {"l2": 1e-3},
    "mlp": {"l2": 1e-4, "epochs": 20},
    "hgb": {},
}


def train(kind: str, blocks: Sequence[Block], features: Sequence[Feature], *, seed: int = 0,
          max_refs: int | None = 5, tokenizer: str = "ptb", monotone: bool = True,
          hyper: Mapping[str, Any] | None = None, meta: Mapping[str, Any] | None = None):
    """Fit one model on the given benchmarks; returns a :class:`RankerModel` (or, for ``hgb``,
    an experiment-only object with ``predict(X_raw)``)."""
    if kind not in KINDS:
        raise InputError(f"unknown learned-model kind {kind!r}; one of {', '.join(KINDS)}")
    if not blocks:
        raise InputError("no training benchmarks")
    features = tuple(features)
    for b in blocks:
        if b.X.shape != (len(b.judgments), len(features)):
            raise InputError(f"{b.judgments.name}: feature matrix {b.X.shape} does not match "
                             f"{len(b.judgments)} units × {len(features)} features")
    hp = {**DEFAULT_HYPER[kind], **(hyper or {})}
    scaler = ranker.Scaler.fit(np.vstack([b.X for b in blocks]))
    mono = monotone_mask(features) if monotone else None
    info = {
        "trained_on": [b.judgments.name for b in blocks],
        "train_units": {b.judgments.name: len(b.judgments) for b in blocks},
        "seed": seed, "hyper": hp, "monotone": bool(monotone),
        "feature_signatures": next((dict(b.signatures) for b in blocks if b.signatures), {}),
        **dict(meta or {}),
    }
    if kind in ("hgb", "ridge"):
        Z = np.vstack([scaler.transform(b.X) for b in blocks])
        y, w = ranker.pointwise_targets([(b.judgments.name, b.judgments) for b in blocks])
        if kind == "ridge":
            return RankerModel(kind, [ranker.fit_ridge(Z, y, w, l2=hp["l2"])], scaler, features, max_refs,
                               tokenizer, info)
        hgb = ranker.fit_hgb(Z, y, w, monotone=mono, seed=seed)
        return _HGBWrapped(hgb, scaler, features, info)
    ts = ranker.stack([(b.judgments.name, scaler.transform(b.X), ranker.comparisons(b.judgments, seed=seed))
                       for b in blocks])
    if kind == "linear":
        params = [ranker.fit_linear(ts, l2=hp["l2"], monotone=mono)]
    elif kind == "pairwise_ls":
        params = [ranker.fit_pairwise_ls(ts, l2=hp["l2"])]
    else:
        params = ranker.fit_mlp(ts, l2=hp["l2"], epochs=hp["epochs"], seed=seed)
    return RankerModel(kind, params, scaler, features, max_refs, tokenizer, info)


@dataclass
class _HGBWrapped:
    model: ranker.HGBModel
    scaler: ranker.Scaler
    features: tuple[Feature, ...]
    meta: dict[str, Any]
    kind: str = "hgb"

    def predict(self, X_raw: np.ndarray) -> np.ndarray:
        return self.model.predict(self.scaler.transform(X_raw))

    predict_batch = predict  # trees: each row's score is its own already


def load_blocks(names: Sequence[str], features: Sequence[Feature], *, cache=None, max_refs: int | None = 5,
                root=None, progress=None, allow_eval_sets: bool = False, images_dir=None) -> dict[str, Block]:
    """Each named human-judgment benchmark with its feature matrix (I/O: data and metrics);
    the evaluation sets (``judgments.EVALUATION_SETS``) only with ``allow_eval_sets``.
    ``images_dir`` holds the benchmarks' images, for features that read them."""
    from .judgments import load_judgments
    from .ranker_features import compute

    pictures = None
    if images_dir is not None:
        from ..imagedir import ImageDir

        pictures = ImageDir(images_dir)
    blocks = {}
    for n in names:
        j = load_judgments(n, root, allow_eval_sets=allow_eval_sets)
        if progress is not None:
            progress(f"features for {n} ({len(j)} units)")
        images = None
        if pictures is not None:
            images = pictures.resolve(j.image_files or [None] * len(j),
                                      f"{n} (`capeval data images {n} --images DIR` lists them)")
        fm = compute(j.candidates, j.references, features, max_refs=max_refs, cache=cache, progress=progress,
                     images=images)
        blocks[n] = Block(j, fm.X, fm.signatures)
    return blocks


# ---- leave one benchmark out ------------------------------------------------------------

def training_blocks(blocks: Mapping[str, Block], held_name: str, train_on: Sequence[str] | None = None
                    ) -> tuple[list[Block], dict[str, int]]:
    """Every block but ``held_name``, less the units that share an image or a candidate text
    with it (and the count dropped from each)."""
    held = blocks[held_name]
    out, dropped = [], {}
    for name, b in blocks.items():
        if name == held_name or (train_on is not None and name not in train_on):
            continue
        drop = overlap_mask(b.judgments, [held.judgments])
        dropped[name] = int(drop.sum())
        sub = b.subset(~drop) if drop.any() else b
        if len(sub.judgments) and (sub.judgments.kind == "rating" or len(sub.judgments.pairs)):
            out.append(sub)
    return out, dropped


def leave_one_out(blocks: Mapping[str, Block], features: Sequence[Feature], kinds: Sequence[str] = KINDS, *,
                  baselines: Mapping[str, Mapping[str, np.ndarray]] | None = None, seed: int = 0,
                  n_resamples: int = 1000, monotone: bool = True, hyper=None,
                  train_on: Sequence[str] | None = None,
                  compare_with: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One record per held-out benchmark: each model kind's number, every single metric's
    number (feature columns and ``baselines[name][metric]`` unit scores), the best single
    metric, and the paired comparison of each model with it (and with each single metric named
    in ``compare_with``, e.g. the ``bertscore_f`` a user would otherwise pick)."""
    features = tuple(features)
    metric_cols = [k for k, f in enumerate(features) if f.metric not in TEXT_FEATURES]
    out = []
    for held_name in held_out_names(blocks):
        held = blocks[held_name]
        train_blocks, dropped = training_blocks(blocks, held_name, train_on)
        j = held.judgments
        singles = {label(features[k]): headline(j, held.X[:, k]) for k in metric_cols}
        single_scores = {label(features[k]): held.X[:, k] for k in metric_cols}
        for m, s in (baselines or {}).get(held_name, {}).items():
            singles[m] = headline(j, s)
            single_scores[m] = np.asarray(s, dtype=float)
        best = max(singles, key=singles.get)
        rec: dict[str, Any] = {"held_out": held_name, "statistic": statistic_of(j), "units": len(j),
                               "trained_on": [b.judgments.name for b in train_blocks],
                               "dropped_overlap": dropped, "singles": singles, "best_single": best,
                               "best_single_value": singles[best], "models": {}}
        for kind in kinds:
            model = train(kind, train_blocks, features, seed=seed, monotone=monotone,
                          hyper=(hyper or {}).get(kind))
            s = model.predict(held.X)
            val = headline(j, s)
            entry = {"value": val, "delta_vs_best": val - singles[best],
                     "clipped_fraction": float(model.scaler.clipped(held.X).mean())}
            entry["vs_best"] = compare(j, s, single_scores[best], n_resamples=n_resamples, seed=seed,
                                       names=(kind, best))
            entry["vs"] = {m: {"delta": val - singles[m], **compare(j, s, single_scores[m], n_resamples=n_resamples,
                                                                     seed=seed, names=(kind, m))}
                           for m in compare_with if m in singles}
            if kind in ("linear", "pairwise_ls", "ridge"):
                entry["weights"] = {label(f): float(w) for f, w in zip(features, model.params[0])}
            rec["models"][kind] = entry
        out.append(rec)
    return out


# ---- recipe selection without the held-out benchmark -------------------------------------

@dataclass(frozen=True)
class Recipe:
    """A candidate training recipe: which feature columns, which model kind, which hyperparameters."""

    name: str
    features: tuple[Feature, ...]
    kind: str = "linear"
    hyper: tuple[tuple[str, Any], ...] = ()
    #: training-only sources (:data:`capeval.learn.judgments.TRAINING_ONLY`) this recipe also
    #: learns from; a recipe without them never sees those blocks
    extra_training: tuple[str, ...] = ()

    def keeps(self, block: "Block") -> bool:
        """Whether this recipe trains on ``block``."""
        n = block.judgments.name
        return n not in TRAINING_ONLY or n in self.extra_training


def held_out_names(blocks: Mapping[str, "Block"]) -> list[str]:
    """The blocks that are held out in turn: every one but the training-only sources."""
    return [n for n in blocks if n not in TRAINING_ONLY]


def columns(all_features: Sequence[Feature], wanted: Sequence[Feature]) -> list[int]:
    """Positions of ``wanted`` among ``all_features`` (by label)."""
    labels = [label(f) for f in all_features]
    missing = [label(f) for f in wanted if label(f) not in labels]
    if missing:
        raise InputError(f"recipe features {', '.join(missing)} are not among the computed features")
    return [labels.index(label(f)) for f in wanted]


def _scaled_delta(j: Judgments, value: float, best: float) -> float:
    # accuracies are in percent: put every delta on the correlation scale before averaging
    return (value - best) / (100.0 if statistic_of(j) == "accuracy" else 1.0)


def _best_single(block: Block, metric_cols: Sequence[int]) -> float:
    return max(headline(block.judgments, block.X[:, k]) for k in metric_cols)


def inner_selection(blocks: Sequence[Block], all_features: Sequence[Feature], recipes: Sequence[Recipe], *,
                    seed: int = 0, monotone: bool = True) -> dict[str, dict[str, float]]:
    """Each recipe's leave-one-out result *within* ``blocks`` (normally the training benchmarks
    of an outer fold): per inner held-out benchmark, the recipe's number minus the best single
    metric among ``all_features`` (accuracy in fractions), and their mean under ``"mean"``."""
    named = {b.judgments.name: b for b in blocks}
    metric_cols = [k for k, f in enumerate(all_features) if f.metric not in TEXT_FEATURES]
    folds = {}
    for inner in held_out_names(named):
        tb, _ = training_blocks(named, inner)
        if tb:
            folds[inner] = (tb, _best_single(named[inner], metric_cols))
    out: dict[str, dict[str, float]] = {}
    for r in recipes:
        cols = columns(all_features, r.features)
        deltas = {}
        for inner, (tb, best) in folds.items():
            model = train(r.kind, [b.with_columns(cols) for b in tb if r.keeps(b)], r.features,
                          seed=seed, monotone=monotone, hyper=dict(r.hyper))
            h = named[inner]
            # predict_batch: the matrix-product scores the shipped models' recipes were selected by
            deltas[inner] = _scaled_delta(h.judgments, headline(h.judgments, model.predict_batch(h.X[:, cols])),
                                          best)
        out[r.name] = {**deltas, "mean": float(np.mean(list(deltas.values()))) if deltas else float("nan")}
    return out


def choose(recipes: Sequence[Recipe], scores: Mapping[str, Mapping[str, float]]) -> Recipe:
    """The recipe with the best mean in ``scores`` (:func:`inner_selection`); earlier wins ties."""
    if not recipes:
        raise InputError("no recipes to select from")
    return max(recipes, key=lambda r: (scores[r.name]["mean"], -list(recipes).index(r)))


def nested_leave_one_out(blocks: Mapping[str, Block], all_features: Sequence[Feature], recipes: Sequence[Recipe], *,
                         seed: int = 0, n_resamples: int = 1000, monotone: bool = True,
                         compare_with: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Leave one benchmark out with the recipe chosen *inside* each fold.

    For each held-out benchmark, every recipe is scored by :func:`inner_selection` on the
    training benchmarks alone (overlap with the held-out one already removed); the recipe with
    the best mean is trained on all of them and evaluated once on the held-out benchmark. No
    choice sees the held-out labels, so the number is an honest estimate of the *procedure*.
    """
    if not recipes:
        raise InputError("no recipes to select from")
    all_features = tuple(all_features)
    metric_cols = [k for k, f in enumerate(all_features) if f.metric not in TEXT_FEATURES]
    out = []
    for held_name in held_out_names(blocks):
        held = blocks[held_name]
        train_blocks, dropped = training_blocks(blocks, held_name)
        scores = inner_selection(train_blocks, all_features, recipes, seed=seed, monotone=monotone)
        chosen = choose(recipes, scores)
        cols = columns(all_features, chosen.features)
        train_blocks = [b for b in train_blocks if chosen.keeps(b)]
        model = train(chosen.kind, [b.with_columns(cols) for b in train_blocks],
                      chosen.features, seed=seed, monotone=monotone, hyper=dict(chosen.hyper))
        j = held.judgments
        s = model.predict(held.X[:, cols])
        val = headline(j, s)
        column = {label(all_features[k]): held.X[:, k] for k in metric_cols}
        singles = {m: headline(j, x) for m, x in column.items()}
        best = max(singles, key=singles.get)
        entry = {"value": val, "delta_vs_best": val - singles[best], "recipe": chosen.name,
                 "clipped_fraction": float(model.scaler.clipped(held.X[:, cols]).mean()),
                 "vs_best": compare(j, s, column[best], n_resamples=n_resamples, seed=seed, names=("nested", best)),
                 "vs": {m: {"delta": val - singles[m],
                            **compare(j, s, column[m], n_resamples=n_resamples, seed=seed, names=("nested", m))}
                        for m in compare_with if m in singles}}
        if chosen.kind in ("linear", "pairwise_ls", "ridge"):
            entry["weights"] = {label(f): float(w) for f, w in zip(chosen.features, model.params[0])}
        out.append({"held_out": held_name, "statistic": statistic_of(j), "units": len(j),
                    "trained_on": [b.judgments.name for b in train_blocks], "dropped_overlap": dropped,
                    "singles": singles, "best_single": best, "best_single_value": singles[best],
                    "inner_selection": scores, "models": {"nested": entry}})
    return out
