"""Seed and validation-protocol spread of NNEval (reported in docs/NNEVAL.md §5, not used to pick
anything): for seeds 0-4 and validation expert / split / none, COMPOSITE τ-c, PASCAL-50S mean
accuracy and Flickr8k-Expert τ-c. The seed changes the machine-caption choice, the
initialisation and the batch order. Features come from the score cache.

    python benchmarks/nneval_seeds.py [--seeds 5] [--out benchmarks/results/nneval_seeds.json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from capeval import data
from capeval.service.cache import ScoreCache
from capeval.learn.builder import load_training_set
from capeval.learn.train import make_recipe, train_recipe
from capeval.stats import kendall_tau_c, pairwise_accuracy
from capeval.stats.experiments import pairwise_units
from capeval.signature import Signature


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "nneval_seeds.json")
    args = ap.parse_args(argv)
    cache = ScoreCache()
    comp, pas, exp = data.load("composite"), data.load("pascal50s"), data.load("flickr8k-expert")
    pc, pr = pairwise_units(pas)
    n = len(pas.candidates_a)
    rows = []
    for validation in ("expert", "split", "none"):
        for seed in range(args.seeds):
            model = train_recipe(make_recipe("nneval", seed=seed), load_training_set(seed=seed),
                                 validation=validation, cache=cache)
            c = kendall_tau_c(model.score(comp.candidates, comp.references, cache=cache), comp.human).value
            e = kendall_tau_c(model.score(exp.candidates, exp.references, cache=cache), exp.human).value
            s = model.score(pc, pr, cache=cache)
            acc = pairwise_accuracy(s[:n], s[n:], pas.labels, pas.categories).percent()["mean"]
            row = {"validation": validation, "seed": seed, "best_epoch": model.meta["validation"].get("best_epoch"),
                   "composite_tau_c": c, "pascal50s_mean": acc, "flickr8k_expert_tau_c": e}
            print(row, file=sys.stderr, flush=True)
            rows.append(row)
    sig = {"composite": str(Signature.make("composite", **{k: v for k, v in comp.protocol.items() if k != "dataset"},
                                           stat="tau-c")),
           "pascal50s": str(Signature.make("pascal50s", **{k: v for k, v in pas.protocol.items() if k != "dataset"},
                                           stat="acc", ties="half")),
           "flickr8k-expert": str(Signature.make("flickr8k-expert", **{k: v for k, v in exp.protocol.items()
                                                                          if k != "dataset"}, stat="tau-c"))}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows, "signatures": sig}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
