"""Train the shipped ``learned`` model from the shared human-judgment data, reproducibly.

    python scripts/train_default_learned.py [--variant default|mpnet]          # rewrite the shipped file
    python scripts/train_default_learned.py [--variant default|mpnet] --check  # retrain and compare

The recipe (features, kind, regularisation) is chosen by the same procedure that
``benchmarks/learned_nested.py`` evaluates: leave-one-benchmark-out among the candidates of the
variant's family (``capeval.learn.recipes``), here over all six human-judgment benchmarks; the
winner is then fitted on all six, so ``capeval bench`` refuses to report the model on any of
them (the nested leave-one-out numbers are its honest estimate). ``default`` selects among
MiniLM-only recipes (``learned-default.npz``), ``mpnet`` also among recipes with
all-mpnet-base-v2 features (``learned-mpnet.npz``; ``capeval models install mpnet``).
Same data + capeval + seed → the same bytes on one machine; across CPUs ``--check`` accepts
parameters within ``--atol``.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from capeval.service.cache import ScoreCache
from capeval.learn import lobo, recipes
from capeval.learn.features import label
from capeval.learn.judgments import JUDGMENT_BENCHMARKS
from capeval.learn.ranker_model import DEFAULT_MAX_REFS, RankerModel
from capeval.digests import sha256_file

SEED = 0
MAX_REFS = DEFAULT_MAX_REFS


def train(variant: str = "default", root=None, cache=None, progress=None) -> RankerModel:
    name_file, family = recipes.SHIPPED[variant]
    candidates = recipes.candidates(family)
    features = recipes.all_features(candidates)
    blocks = lobo.load_blocks(recipes.sources(candidates), features, cache=cache, max_refs=MAX_REFS, root=root,
                              progress=progress)
    if progress is not None:
        progress(f"selecting among {len(candidates)} recipes (leave one benchmark out over all six)")
    # selection holds out the six human-judgment benchmarks only; training-only sources stay in
    scores = lobo.inner_selection(list(blocks.values()), features, candidates, seed=SEED)
    chosen = lobo.choose(candidates, scores)
    cols = lobo.columns(features, chosen.features)
    train_blocks = [b.with_columns(cols) for b in blocks.values() if chosen.keeps(b)]
    model = lobo.train(chosen.kind, train_blocks, chosen.features, seed=SEED, max_refs=MAX_REFS,
                       hyper=dict(chosen.hyper),
                       meta={"name": Path(name_file).stem, "selected_on": list(JUDGMENT_BENCHMARKS),
                             "recipe": chosen.name, "recipe_family": family,
                             "selection_mean_delta": {k: v["mean"] for k, v in scores.items()},
                             "features_spec": "+".join(label(f) for f in chosen.features),
                             "script": "scripts/train_default_learned.py"})
    # the signatures of the chosen columns only (the blocks carry every candidate's)
    chosen_labels = {label(f) for f in chosen.features}
    model.meta["feature_signatures"] = {k: v for k, v in model.meta["feature_signatures"].items()
                                        if k in chosen_labels}
    return model


def _close(new: RankerModel, old: RankerModel, atol: float) -> bool:
    if new.meta.get("feature_signatures") != old.meta.get("feature_signatures"):
        print("feature signatures changed: retrain and ship the model again")
        return False
    if len(new.params) != len(old.params) or any(a.shape != b.shape for a, b in zip(new.params, old.params)):
        print("parameter shapes differ")
        return False
    worst = max(float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(new.params, old.params))
    print(f"bytes differ; largest parameter difference {worst:.3g} (atol {atol:g})")
    return worst <= atol


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", choices=sorted(recipes.SHIPPED), default="default")
    ap.add_argument("--out", type=Path, default=None, help="default: the shipped file of the variant")
    ap.add_argument("--check", action="store_true", help="compare a retrain with the shipped file")
    ap.add_argument("--atol", type=float, default=1e-6)
    ap.add_argument("--cache-dir", type=Path, default=None)
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--root", type=Path, default=None, help="data root (default $CAPEVAL_DATA)")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    say = lambda msg: print(f"[{time.perf_counter() - start:7.1f}s] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    args.out = args.out or recipes.shipped_path(args.variant)
    model = train(args.variant, args.root, ScoreCache(args.cache_dir, enabled=not args.no_cache), say)
    say(f"chose {model.meta['recipe']} ({len(model.features)} features)")
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            sha = model.save(Path(tmp) / "learned.npz")
        shipped = sha256_file(args.out)
        print(f"retrained {sha}\nshipped   {shipped}")
        return 0 if sha == shipped or _close(model, RankerModel.load(args.out), args.atol) else 1
    sha = model.save(args.out)
    print(f"{args.out}\tsha256:{sha}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
