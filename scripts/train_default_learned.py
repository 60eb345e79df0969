"""Train the shipped ``learned`` model from the shared human-judgment data, reproducibly.

    python scripts/train_default_learned.py            # rewrite src/capeval/learn/weights/learned-default.npz
    python scripts/train_default_learned.py --check    # retrain into a temp file and compare with the shipped one

The kind, features and regularisation (``capeval.learn.ranker_model.DEFAULT_*``) were chosen by the mean leave-one-benchmark-out
result (benchmarks/learned_lobo.py, docs/LEARNED.md); the shipped model is then fitted on every
human-judgment benchmark, so ``capeval bench`` refuses to report it on any of them (use the
leave-one-out numbers instead). Same data + capeval + seed → the same bytes on one machine;
across CPUs ``--check`` accepts parameters within ``--atol``.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from capeval.service.cache import ScoreCache
from capeval.learn import lobo
from capeval.learn import ranker_features as rf
from capeval.learn.judgments import JUDGMENT_BENCHMARKS
from capeval.learn.ranker_model import (DEFAULT_FEATURES, DEFAULT_HYPER, DEFAULT_KIND, DEFAULT_MAX_REFS,
                                        RankerModel, default_model_path)
from capeval.digests import sha256_file

SEED = 0
KIND, FEATURES, HYPER, MAX_REFS = DEFAULT_KIND, DEFAULT_FEATURES, DEFAULT_HYPER, DEFAULT_MAX_REFS
NAME = "learned-default"
#: Every decision above was taken by comparing leave-one-benchmark-out results on these.
SELECTED_ON = list(JUDGMENT_BENCHMARKS)


def train(root=None, cache=None, progress=None) -> RankerModel:
    features = rf.parse(FEATURES)
    blocks = lobo.load_blocks(list(JUDGMENT_BENCHMARKS), features, cache=cache, max_refs=MAX_REFS, root=root,
                              progress=progress)
    return lobo.train(KIND, list(blocks.values()), features, seed=SEED, max_refs=MAX_REFS, hyper=HYPER,
                      meta={"name": NAME, "selected_on": SELECTED_ON, "features_spec": FEATURES,
                            "recipe": "scripts/train_default_learned.py"})


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
    ap.add_argument("--out", type=Path, default=default_model_path())
    ap.add_argument("--check", action="store_true", help="compare a retrain with the shipped file")
    ap.add_argument("--atol", type=float, default=1e-6)
    ap.add_argument("--cache-dir", type=Path, default=None)
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--root", type=Path, default=None, help="data root (default $CAPEVAL_DATA)")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    say = lambda msg: print(f"[{time.perf_counter() - start:7.1f}s] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    model = train(args.root, ScoreCache(args.cache_dir, enabled=not args.no_cache), say)
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
