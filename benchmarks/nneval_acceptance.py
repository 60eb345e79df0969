"""NNEval before and after the out-of-range fixes, next to every input feature, on COMPOSITE,
PASCAL-50S, Flickr8k-Expert, Flickr8k-CF, ABSTRACT-50S and the distractor tasks, through the
benchmark runner (`capeval bench`'s code path), with significance of the learned models against
their best input feature (Williams test on Pearson r, paired bootstrap on the headline number).

    python benchmarks/nneval_acceptance.py [--resamples 1000] [--out benchmarks/results/nneval.json]

Variants (all seed 0; trained here into a temporary folder unless said otherwise):

- ``before``: the model shipped before this comparison (read from git at ``BEFORE_COMMIT``),
  scored as it was then: all references, no clipping.
- ``paper``: the paper's recipe on today's training rows: all references, no clipping.
- ``all+clip``, ``cap4+clip``, ``groups4+clip`` (the cap4 weights, scored over disjoint groups of
  4), ``per-ref+clip``: reference policies of ``capeval.learn.refsets`` with clipping.
- ``cap4+clip+mono``; ``per-ref+clip+mono`` (the model shipped before synthetic negatives).
- ``mono+obj3``, ``mono+obj1``, ``mono+obj1+shuf1``, ``mono+shuf3``: ``per-ref+clip+mono``
  trained with synthetic machine rows (``capeval.learn.builder``, ``negatives=``): object-list
  and/or shuffled-word negatives for the first 1 or 3 human candidates of each image.
- ``shipped`` (per-ref + clip + monotone + shuffle negatives for 2 slots, the file in the
  package) and ``shipped-split`` (the same recipe early-stopped on 10% of the training images:
  no evaluation data seen).

Feature scores come through the score cache, so a second run only re-reads them.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


from capeval import data
from capeval.service.cache import ScoreCache
from capeval.metaeval.runner import run_benchmark
from capeval.service.scoring import score_units
from capeval.learn.builder import load_training_set
from capeval.learn.features import NNEVAL_FEATURES
from capeval.learn.model import LearnedModel
from capeval.learn.configs import DEFAULT_MODEL, default_model_path
from capeval.learn.train import make_recipe, train_recipe
from capeval.stats import paired_bootstrap_accuracy, paired_bootstrap_correlation, williams_from_scores
from capeval.stats.experiments import correlation_units, pairwise_units

ROOT = Path(__file__).resolve().parents[1]
FEATURES = [f.metric for f in NNEVAL_FEATURES]  # cider_d's /10 does not change any statistic
FEATURE_OPTIONS = {"wmd": {"norm": True}}  # the WMD variant NNEval uses (METHODS.md §7.3)
BENCHMARKS = ("abstract50s", "distractors", "pascal50s", "composite", "flickr8k-expert", "flickr8k-cf")
BEFORE_COMMIT = "03f886c0ec8f7bba0654e956dba9f544c6779f25"  # shipped model sha256 a68178620d24…
PAPER = {
    "composite": {"pearson": 0.532, "spearman": 0.524, "kendall_tau_c": 0.404},
    "pascal50s": {"HC": 60.4, "HI": 99.0, "HM": 92.1, "MM": 70.4},
}
#: name -> (recipe options or None for a file, validation, scoring options for the nneval metric);
#: recipe options may hold the training-set options ``negatives`` and ``negative_slots``.
MONO = {"refs": "per-ref", "monotone": True}
SHIPPED_NEGATIVES = {"negatives": ("shuffle",), "negative_slots": 2}  # scripts/train_default_nneval.py
VARIANTS = {
    "before": (None, None, {"refs": "all", "clip": False}),
    "paper": ({"refs": "all", "clip": False}, "expert", {}),
    "all+clip": ({"refs": "all"}, "expert", {}),
    "cap4+clip": ({"refs": "cap"}, "expert", {}),
    "groups4+clip": ("cap4+clip", None, {"refs": "groups"}),
    "per-ref+clip": ({"refs": "per-ref"}, "expert", {}),
    "cap4+clip+mono": ({"refs": "cap", "monotone": True}, "expert", {}),
    "per-ref+clip+mono": (MONO, "expert", {}),
    "mono+obj3": ({**MONO, "negatives": ("object-list",), "negative_slots": 3}, "expert", {}),
    "mono+obj1": ({**MONO, "negatives": ("object-list",), "negative_slots": 1}, "expert", {}),
    "mono+obj1+shuf1": ({**MONO, "negatives": ("object-list", "shuffle"), "negative_slots": 1}, "expert", {}),
    "mono+shuf3": ({**MONO, "negatives": ("shuffle",), "negative_slots": 3}, "expert", {}),
    "shipped": (None, None, {}),
    "shipped-split": ({**MONO, **SHIPPED_NEGATIVES}, "split", {}),
}
TRAINING_SET_OPTIONS = ("negatives", "negative_slots")
TESTED = ("shipped", "per-ref+clip+mono", "shipped-split")  # significance against the best input feature


def models(folder: Path, cache: ScoreCache, say) -> dict[str, Path]:
    before = folder / "before.npz"
    before.write_bytes(subprocess.run(["git", "show", f"{BEFORE_COMMIT}:src/capeval/learn/{DEFAULT_MODEL}"],
                                      cwd=ROOT, check=True, capture_output=True).stdout)
    paths = {"before": before, "shipped": default_model_path()}
    sets: dict[tuple, object] = {}
    for name, (recipe, validation, _) in VARIANTS.items():
        if isinstance(recipe, dict):
            say(f"training {name}")
            set_opts = {k: v for k, v in recipe.items() if k in TRAINING_SET_OPTIONS}
            key = tuple(sorted(set_opts.items()))
            if key not in sets:
                sets[key] = load_training_set(seed=0, **set_opts)
            recipe_opts = {k: v for k, v in recipe.items() if k not in TRAINING_SET_OPTIONS}
            model = train_recipe(make_recipe("nneval", seed=0, **recipe_opts), sets[key], validation=validation,
                                 cache=cache)
            paths[name] = folder / f"{name}.npz"
            model.save(paths[name])
        elif isinstance(recipe, str):
            paths[name] = paths[recipe]
    return paths


def clipped_fraction(path: Path, units, scoring: dict, cache: ScoreCache) -> float:
    m = LearnedModel.load(path)
    fm = m.features_for(*units, cache=cache, refs=scoring.get("refs"))
    return float(m.scaler.outside(fm.X).mean())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "nneval.json")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--benchmarks", default=",".join(BENCHMARKS))
    args = ap.parse_args(argv)
    start = time.perf_counter()
    say = lambda msg: print(f"[{time.perf_counter() - start:7.1f}s] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    cache = ScoreCache()
    out: dict = {"paper": PAPER, "benchmarks": {}, "models": {}}
    with tempfile.TemporaryDirectory() as tmp:
        paths = models(Path(tmp), cache, say)
        for name, path in paths.items():
            m = LearnedModel.load(path)
            out["models"][name] = {
                "sha256": m.sha256, "refs": VARIANTS[name][2].get("refs", m.refs),
                "clip": VARIANTS[name][2].get("clip", m.clip), "monotone": bool(m.meta["config"].get("monotone")),
                "validation": {k: v for k, v in m.meta["validation"].items() if k != "history"},
                "trained_on": m.meta.get("trained_on"), "selected_on": m.meta.get("selected_on"),
                "negatives": m.meta.get("negatives", []),
                "negative_rows": m.meta["training"].get("negative_rows", {}),
                "training_rows": m.meta["training"]["rows"]}
        for bench in args.benchmarks.split(","):
            say(f"{bench}: features")
            base = run_benchmark(bench, FEATURES, cache=cache, options=FEATURE_OPTIONS, seed=args.seed)
            table = data.load(bench)
            units = correlation_units(table) if base.kind == "correlation" else pairwise_units(table)
            per_unit = dict(base.scores)
            sigs = dict(base.metric_signatures)
            experiments = {m: base for m in FEATURES}
            clipped = {}
            for name, path in paths.items():
                say(f"{bench}: {name}")
                opts = {**FEATURE_OPTIONS, "nneval": {"model": str(path), "cache": True, **VARIANTS[name][2]}}
                res = run_benchmark(bench, ["nneval"], cache=cache, options=opts, seed=args.seed, allow_seen=True)
                experiments[name] = res
                sigs[name] = res.metric_signatures["nneval"]
                per_unit[name] = score_units(*units, ["nneval"], options=opts, cache=cache).per_caption["nneval"]
                clipped[name] = clipped_fraction(path, units, VARIANTS[name][2], cache)
            rows: dict[str, dict] = {}
            for label, res in experiments.items():
                metric = label if label in FEATURES else "nneval"
                r = res.experiment.results[metric]
                if res.kind == "correlation":
                    rows[label] = {s: c.value for s, c in r.items()}
                else:
                    rows[label] = dict(r.percent())
                    cats = {k: v for k, v in rows[label].items() if k != "mean"}
                    rows[label]["worst"] = min(cats.values())
                    rows[label]["ties"] = r.total_ties
                if label in clipped:
                    rows[label]["clipped_fraction"] = clipped[label]
            entry = {"signature": str(base.signature()), "rows": rows, "metric_signatures": sigs, "tests": {}}
            if base.kind == "correlation":
                stat = base.statistic
                best = max(FEATURES, key=lambda f: rows[f][stat])
                for name in TESTED:
                    w = williams_from_scores(table.human, per_unit[name], per_unit[best], names=(name, best))
                    pb = paired_bootstrap_correlation(per_unit[name], per_unit[best], table.human, stat,
                                                      n_resamples=args.resamples, seed=args.seed, names=(name, best))
                    entry["tests"][name] = {
                        "vs": best, "williams_pearson": {"t": w.t, "p": w.p_value, "df": w.df,
                                                         "r_model": w.r12, "r_feature": w.r13},
                        f"paired_bootstrap_{stat}": {"delta": pb.delta, "low": pb.low, "high": pb.high,
                                                     "p": pb.p_value, "signature": str(pb.signature())}}
            else:
                best = max(FEATURES, key=lambda f: rows[f]["mean"])
                for name in TESTED:
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
