"""Train the shipped NNEval model from the shared data, reproducibly.

    python scripts/train_default_nneval.py            # rewrite src/capeval/learn/weights/nneval-default.npz
    python scripts/train_default_nneval.py --check    # retrain into a temp file and compare with the shipped one

Same data + same capeval + same seed → the same bytes on one machine (fixed-timestamp .npz,
float64 numpy, seeded Generator). Across CPUs, BLAS kernels may round the last bit of a matrix
product differently, so ``--check`` passes on an identical sha256 or, failing that, on the same
selected epoch with every parameter within ``--atol`` of the shipped one; it fails when a
feature's signature changed (the model must be retrained and shipped again). Feature scores go through the benchmark score cache (content-hash keyed, so a
cached column is exactly the recomputed one); --no-cache recomputes everything (~10-20 min on
2 cores, METEOR and SPICE dominate).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# The shipped model must retrain to the same bytes on any CPU: METEOR's fragmentation penalty
# takes Math.pow from the local JVM by default, whose last bit depends on the CPU, so training
# uses the table shipped with capeval (signature pow:shipped).
os.environ["CAPEVAL_METEOR_POW"] = "shipped"

from capeval.service.cache import ScoreCache  # noqa: E402
from capeval.learn.builder import load_training_set  # noqa: E402
from capeval.learn.configs import default_model_path  # noqa: E402
from capeval.learn.train import make_recipe, train_recipe  # noqa: E402
from capeval.digests import sha256_file  # noqa: E402
from capeval.learn.model_files import load_npz  # noqa: E402

SEED = 0
VALIDATION = "expert"  # the paper's protocol; docs/NNEVAL.md also reports the "split" model
# How the shipped model meets new captions (docs/NNEVAL.md §5 compares the alternatives):
# features averaged over single references, so their range does not move with the reference
# count; clipped to the training range; network constrained to never score lower when a
# feature rises (not in the paper).
REFS = "per-ref"
CLIP = True
MONOTONE = True
# Synthetic machine rows (not in the paper; docs/NNEVAL.md §2): the words of human candidates
# 0 and 1 of each training image in a seeded random order. Degenerate outputs are machine output
# the pool's captioners never wrote; without them the human-vs-machine labels give BLEU-2..4 no
# positive weight and a bag of reference nouns outscores the real caption. Object-list
# negatives were measured too and cost more on COMPOSITE and Flickr8k-Expert (§5).
NEGATIVES = ("shuffle",)
NEGATIVE_SLOTS = 2
#: Benchmarks the comparison of reference policies, of the monotone constraint and of the
#: synthetic negatives was measured on before these settings were fixed
#: (benchmarks/nneval_acceptance.py); recorded in the model file.
DESIGN_CHOSEN_ON = ["abstract50s", "composite", "distractors", "flickr8k-cf", "pascal50s"]


def default_recipe(seed: int = SEED):
    return make_recipe("nneval", seed=seed, refs=REFS, clip=CLIP, monotone=MONOTONE)


def _numerically_equal(new, new_meta, old, old_meta, atol: float) -> bool:
    if new_meta["feature_signatures"] != old_meta["feature_signatures"]:
        changed = sorted(k for k in new_meta["feature_signatures"]
                         if new_meta["feature_signatures"][k] != old_meta["feature_signatures"].get(k))
        print(f"feature signatures changed ({', '.join(changed)}): retrain and ship the model again")
        return False
    if sorted(new) != sorted(old) or any(new[k].shape != old[k].shape for k in new):
        print("array names or shapes differ")
        return False
    worst = max(float(np.max(np.abs(new[k] - old[k]), initial=0.0)) for k in new)
    same_epoch = new_meta["validation"]["best_epoch"] == old_meta["validation"]["best_epoch"]
    print(f"bytes differ; largest parameter difference {worst:.3g} (atol {atol:g}), "
          f"best epoch {'equal' if same_epoch else 'differs'}")
    return same_epoch and worst <= atol


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=default_model_path())
    ap.add_argument("--check", action="store_true", help="compare a retrain with the shipped file")
    ap.add_argument("--atol", type=float, default=1e-6,
                    help="largest parameter difference --check accepts when the bytes differ")
    ap.add_argument("--cache-dir", type=Path, default=None)
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--root", type=Path, default=None, help="data root (default $CAPEVAL_DATA)")
    args = ap.parse_args(argv)

    start = time.perf_counter()
    say = lambda msg: print(f"[{time.perf_counter() - start:7.1f}s] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    training = load_training_set(args.root, seed=SEED, negatives=NEGATIVES, negative_slots=NEGATIVE_SLOTS)
    say(f"{training.info['rows']} rows from {training.info['images']} images "
        f"({training.info['excluded_images']} evaluation images held out; synthetic negatives "
        f"{training.info['negative_rows']})")
    model = train_recipe(default_recipe(), training, validation=VALIDATION, root=args.root,
                         cache=ScoreCache(args.cache_dir, enabled=not args.no_cache), progress=say)
    model.meta["design_chosen_on"] = list(DESIGN_CHOSEN_ON)
    v = model.meta["validation"]
    say(f"best epoch {v['best_epoch']} of {v['epochs_run']}: Flickr8k-Expert tau-c {v['best_score']:.4f}")
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            sha = model.save(Path(tmp) / "nneval.npz")
            retrained, retrained_meta = load_npz(Path(tmp) / "nneval.npz")
        shipped = sha256_file(args.out)
        print(f"retrained {sha}\nshipped   {shipped}")
        if sha == shipped:
            return 0
        return 0 if _numerically_equal(retrained, retrained_meta, *load_npz(args.out), args.atol) else 1
    sha = model.save(args.out)
    print(f"{args.out}\tsha256:{sha}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
