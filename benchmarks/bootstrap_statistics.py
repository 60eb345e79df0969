"""Corpus bootstrap on sufficient statistics against re-scoring every resample (issue 34).

For each family, the statistics of the rows are computed once (``Metric.statistics``, after
tokenizing the rows once for a family that reads tokens) and
``capeval.stats.bootstrap.corpus_distribution`` takes ``--resamples`` resamples of them. The
re-scoring side is what a bootstrap without statistics does: ``capeval.score`` on the
resampled rows (the same index draws, seed 12345), tokenization included, for every resample,
and every re-scored value is checked ``==`` the statistics one.

Re-scoring is measured, not estimated, for every resample it reaches: it stops early only
after ``--rescore-resamples`` resamples (default: all of them) or once its CPU passes
``--rescore-budget-s`` seconds for the metric (default 600). Only then is its CPU for all
``--resamples`` extrapolated linearly from the re-scored ones; the JSON says which
(``rescoring_cpu_s`` is ``"measured"`` or ``"extrapolated_linear"``).

CPU seconds are the process' user+sys (all threads) plus that of reaped child processes.
Each metric scores a few rows before either side is timed, so resources (METEOR's tables)
are loaded before timing. Rows: Flickr8k-Expert (the first ``--rows``; CAPEVAL_DATA). Writes
benchmarks/results/bootstrap_statistics.json (or ``--out``). This script times its runs:
run it on a quiet machine.

    python benchmarks/bootstrap_statistics.py [--rows 2000] [--resamples 1000]
        [--rescore-resamples K] [--rescore-budget-s 600] [--metrics bleu4,meteor,ter,rouge_l]
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

from _common import expert_rows

SEED = 12345


def cpu_s() -> float:
    """User+sys CPU seconds of this process (every thread) and its reaped children."""
    own = time.process_time()
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own + ch.ru_utime + ch.ru_stime


def measure(name: str, cands: list[str], refs: list[list[str]], args) -> dict:
    import capeval
    from capeval.metrics.registry import family_for
    from capeval.stats.bootstrap import corpus_distribution, resample_indices
    from capeval.text import tokenize_corpus

    cls = family_for(name)
    capeval.score(cands[:5], refs[:5], [name])  # warm: resources loaded before either side is timed
    t0 = cpu_s()
    texts = tokenize_corpus(cands, refs, "ptb") if cls.text_input == "tokenized" else (cands, refs)
    with cls() as m:
        stats = m.statistics(*texts)
    dist = corpus_distribution(stats, name, n_resamples=args.resamples, seed=SEED)
    on_stats = cpu_s() - t0

    limit = min(args.rescore_resamples or args.resamples, args.resamples)
    draws = itertools.chain.from_iterable(resample_indices(len(cands), args.resamples, seed=SEED))
    spent, done, equal = 0.0, 0, True
    for row in itertools.islice(draws, limit):
        t0 = cpu_s()
        value = capeval.score([cands[i] for i in row], [refs[i] for i in row], [name]).corpus[name]
        spent += cpu_s() - t0
        equal = equal and bool(value == dist[done])
        done += 1
        if spent > args.rescore_budget_s:
            break
    full = done == args.resamples
    rescored = spent if full else spent * args.resamples / done
    return {
        "statistics_cpu_s": round(on_stats, 3),
        "rescoring_cpu_s": round(rescored, 3),
        "rescoring": "measured" if full else f"extrapolated_linear from {done} re-scored resamples",
        "rescored_resamples": done,
        "rescoring_cpu_s_measured": round(spent, 3),
        "ratio_rescoring_over_statistics": round(rescored / on_stats, 2),
        "rescored_values_equal_statistics_values": equal,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--rescore-resamples", "--rescore", type=int, default=None,
                    help="re-score at most this many resamples (default: all); the rest is extrapolated linearly")
    ap.add_argument("--rescore-budget-s", type=float, default=600.0,
                    help="stop re-scoring a metric once its CPU passes this (default %(default)s s)")
    ap.add_argument("--metrics", default="bleu4,meteor,ter,rouge_l")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "bootstrap_statistics.json")
    args = ap.parse_args(argv)
    if args.rows < 1 or args.resamples < 1 or (args.rescore_resamples is not None and args.rescore_resamples < 1):
        ap.error("--rows, --resamples and --rescore-resamples must be positive")
    cands, refs = expert_rows(args.rows)
    out = {
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "data": "flickr8k-expert, first rows", "rows": len(cands), "resamples": args.resamples, "seed": SEED,
        "statistics_side": "tokenize once + Metric.statistics + corpus_distribution over every resample",
        "rescoring_side": "capeval.score on each resample's rows (tokenization included)",
        "cpu": "user+sys of the process (all threads) and its reaped children",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "metrics": {},
    }
    for name in args.metrics.split(","):
        out["metrics"][name] = measure(name, cands, refs, args)
        print(name, out["metrics"][name], flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0 if all(m["rescored_values_equal_statistics_values"] for m in out["metrics"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
