"""Leave-one-benchmark-out evaluation of capeval's ``learned`` metric.

For each human-judgment benchmark, every model kind is trained on the others (overlapping
images and candidate texts removed) and scored on it, beside every single metric from the same
run, with a paired bootstrap (and Williams test for rating benchmarks) against the best one.

    python benchmarks/learned_lobo.py [--features default] [--baselines meteor,spice]
        [--kinds linear,pairwise_ls,mlp,hgb] [--out benchmarks/results/learned_lobo.json]

Features and baselines come from the score cache (computed on first use).
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path


from capeval._version import __version__
from capeval.service.cache import ScoreCache
from capeval.learn import lobo
from capeval.learn import ranker_features as rf
from capeval.learn.features import label
from capeval.learn.judgments import JUDGMENT_BENCHMARKS

RESULTS = Path(__file__).with_name("results")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--features", default="default")
    ap.add_argument("--baselines", default="", help="extra single metrics to compare with, e.g. meteor,spice")
    ap.add_argument("--kinds", default=",".join(lobo.KINDS))
    ap.add_argument("--benchmarks", default=",".join(JUDGMENT_BENCHMARKS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--max-refs", type=int, default=5)
    ap.add_argument("--no-monotone", action="store_true")
    ap.add_argument("--hyper", default="{}", help='per-kind hyperparameters as JSON, e.g. \'{"linear": {"l2": 0.01}}\'')
    ap.add_argument("--compare-with", default="bertscore_f",
                    help="single metrics every model is also compared with (paired bootstrap / Williams)")
    ap.add_argument("--out", type=Path, default=RESULTS / "learned_lobo.json")
    args = ap.parse_args(argv)
    features = rf.parse(args.features)
    names = [n for n in args.benchmarks.split(",") if n]
    cache = ScoreCache()
    t0 = time.perf_counter()
    blocks = lobo.load_blocks(names, features, cache=cache, max_refs=args.max_refs)
    baselines = {}
    extra = [m for m in args.baselines.split(",") if m]
    if extra:
        bfeats = rf.parse(extra)
        for n, b in blocks.items():
            fm = rf.compute(b.judgments.candidates, b.judgments.references, bfeats, max_refs=args.max_refs,
                            cache=cache)
            baselines[n] = {label(f): fm.X[:, k] for k, f in enumerate(bfeats)}
    t1 = time.perf_counter()
    records = lobo.leave_one_out(blocks, features, [k for k in args.kinds.split(",") if k],
                                 baselines=baselines, seed=args.seed, n_resamples=args.resamples,
                                 monotone=not args.no_monotone, hyper=json.loads(args.hyper),
                                 compare_with=[m for m in args.compare_with.split(",") if m])
    t2 = time.perf_counter()
    out = {
        "capeval": __version__, "python": platform.python_version(),
        "features": [label(f) for f in features], "baselines": extra, "max_refs": args.max_refs,
        "monotone": not args.no_monotone, "hyper": json.loads(args.hyper), "seed": args.seed, "resamples": args.resamples,
        "seconds": {"features": round(t1 - t0, 1), "lobo": round(t2 - t1, 1)},
        "records": records,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1, default=float) + "\n")
    for r in records:
        models = "  ".join(f"{k} {v['value']:.4g} ({v['delta_vs_best']:+.3g}, p={v['vs_best']['bootstrap_p']:.3g})"
                           for k, v in r["models"].items())
        print(f"{r['held_out']:16s} best {r['best_single']} {r['best_single_value']:.4g} | {models}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
