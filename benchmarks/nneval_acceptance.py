"""NNEval side by side with the paper: every input feature and every learned model on COMPOSITE
(Pearson / Spearman / Kendall τ-c), PASCAL-50S (HC / HI / HM / MM / mean) and Flickr8k-Expert
(τ-c), through the benchmark runner (`capeval bench`'s code path), plus significance of the
learned model against its best input feature (Williams test on Pearson r, paired bootstrap on
τ-c and on PASCAL mean accuracy).

    python benchmarks/nneval_acceptance.py [--resamples 1000] [--out benchmarks/results/nneval.json]

Learned models: the shipped NNEval (early stopping on Flickr8k-Expert, the paper's protocol), and,
trained here with seed 0 into a temporary folder, NNEval with split validation (no evaluation data
seen), the LCEval-style softmax regression and the ridge combination (both Expert-validated).
All feature scores come through the score cache, so a second run only re-reads them.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from capeval.bench.cache import ScoreCache
from capeval.bench.runner import run_benchmark
from capeval.bench.scoring import score_units
from capeval.learn.builder import load_training_set
from capeval.learn.features import NNEVAL_FEATURES
from capeval.learn.nneval import default_model_path
from capeval.learn.train import make_recipe, train_recipe
from capeval.meta import paired_bootstrap_accuracy, paired_bootstrap_correlation, williams_from_scores
from capeval.meta.experiments import correlation_units, pairwise_units

FEATURES = [f.metric for f in NNEVAL_FEATURES]  # cider_d's /10 does not change any statistic
FEATURE_OPTIONS = {"wmd": {"norm": True}}  # the WMD variant NNEval uses (METHODS.md §7.3)
PAPER = {
    "composite": {"pearson": 0.532, "spearman": 0.524, "kendall_tau_c": 0.404},
    "pascal50s": {"HC": 60.4, "HI": 99.0, "HM": 92.1, "MM": 70.4},
}


def train_comparison_models(folder: Path, cache: ScoreCache, say) -> dict[str, Path]:
    training = load_training_set(seed=0)
    paths = {"nneval": default_model_path()}
    for name, recipe, validation in (("nneval-split", "nneval", "split"), ("lceval", "lceval", "expert"),
                                     ("linear", "linear", "expert")):
        say(f"training {name}")
        model = train_recipe(make_recipe(recipe, seed=0), training, validation=validation, cache=cache)
        paths[name] = folder / f"{name}.npz"
        model.save(paths[name])
    return paths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "nneval.json")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=12345)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    say = lambda msg: print(f"[{time.perf_counter() - start:7.1f}s] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    cache = ScoreCache()
    out: dict = {"paper": PAPER, "benchmarks": {}, "models": {}}
    with tempfile.TemporaryDirectory() as tmp:
        models = train_comparison_models(Path(tmp), cache, say)
        from capeval.learn.model import LearnedModel

        for name, path in models.items():
            m = LearnedModel.load(path)
            out["models"][name] = {"sha256": m.sha256, "kind": m.kind, "validation": {
                k: v for k, v in m.meta["validation"].items() if k != "history"}, "training": m.meta["training"]}
        for bench in ("composite", "pascal50s", "flickr8k-expert"):
            say(f"{bench}: features")
            base = run_benchmark(bench, FEATURES, cache=cache, options=FEATURE_OPTIONS, seed=args.seed)
            rows: dict[str, dict] = {}
            sigs = dict(base.metric_signatures)
            per_unit: dict[str, np.ndarray] = {}
            from capeval import data

            table = data.load(bench)
            units = correlation_units(table) if base.kind == "correlation" else pairwise_units(table)
            feats = score_units(*units, FEATURES, options=FEATURE_OPTIONS, cache=cache)
            per_unit.update(feats.per_unit)
            experiments = {"features": base}
            for name, path in models.items():
                say(f"{bench}: {name}")
                opts = {**FEATURE_OPTIONS, "nneval": {"model": str(path), "cache": True}}
                res = run_benchmark(bench, ["nneval"], cache=cache, options=opts, seed=args.seed)
                experiments[name] = res
                sigs[name] = res.metric_signatures["nneval"]
                per_unit[name] = score_units(*units, ["nneval"], options=opts, cache=cache).per_unit["nneval"]
            for key, res in experiments.items():
                exp = res.experiment
                for metric in res.metrics:
                    label = metric if key == "features" else key
                    if res.kind == "correlation":
                        rows[label] = {s: c.value for s, c in exp.results[metric].items()}
                    else:
                        rows[label] = exp.results[metric].percent()
                        rows[label]["ties"] = exp.results[metric].total_ties
            entry = {"signature": str(base.signature()), "rows": rows, "metric_signatures": sigs, "tests": {}}
            if base.kind == "correlation":
                stat = "kendall_tau_c"
                best = max(FEATURES, key=lambda f: rows[f][stat])
                for name in models:
                    w = williams_from_scores(table.human, per_unit[name], per_unit[best], names=(name, best))
                    pb = paired_bootstrap_correlation(per_unit[name], per_unit[best], table.human, stat,
                                                      n_resamples=args.resamples, seed=args.seed, names=(name, best))
                    entry["tests"][name] = {
                        "vs": best, "williams_pearson": {"t": w.t, "p": w.p_value, "df": w.df,
                                                         "r_model": w.r12, "r_feature": w.r13},
                        "paired_bootstrap_tau_c": {"delta": pb.delta, "low": pb.low, "high": pb.high,
                                                   "p": pb.p_value, "signature": str(pb.signature())}}
            else:
                best = max(FEATURES, key=lambda f: rows[f]["mean"])
                for name in models:
                    pb = paired_bootstrap_accuracy(experiments[name].experiment.results["nneval"],
                                                   base.experiment.results[best], n_resamples=args.resamples,
                                                   seed=args.seed)
                    entry["tests"][name] = {"vs": best, "paired_bootstrap_mean_acc": {
                        "delta": 100 * pb.delta, "low": 100 * pb.low, "high": 100 * pb.high, "p": pb.p_value,
                        "signature": str(pb.signature())}}
            out["benchmarks"][bench] = entry
            say(f"{bench}: done")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    say(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
