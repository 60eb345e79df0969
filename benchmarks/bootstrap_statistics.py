"""Corpus bootstrap on sufficient statistics against re-scoring every resample (issue 34).

For each family, the statistics of the rows are computed once (``Metric.statistics``) and
``capeval.stats.bootstrap.corpus_distribution`` takes ``--resamples`` resamples of them; the
re-scoring side runs ``capeval.score`` on the resampled rows of the first ``--rescore``
resamples (the same index draws) and is extrapolated linearly to ``--resamples``. Every value
of the re-scored resamples is checked ``==`` the statistics one. Rows: Flickr8k-Expert
(``--rows`` first ones). Reports CPU seconds of both sides and their ratio; writes
benchmarks/results/bootstrap_statistics.json.

    python benchmarks/bootstrap_statistics.py [--rows 2000] [--resamples 1000] [--rescore 20]
        [--metrics bleu4,meteor,ter,rouge_l]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from _common import expert_rows


def main() -> None:
    import capeval
    from capeval.metrics.registry import family_for
    from capeval.stats.bootstrap import corpus_distribution, resample_indices
    from capeval.text import tokenize_corpus

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--rescore", type=int, default=20)
    ap.add_argument("--metrics", default="bleu4,meteor,ter,rouge_l")
    args = ap.parse_args()
    cands, refs = expert_rows(args.rows)
    tok = tokenize_corpus(cands, refs, "ptb")
    draws = next(resample_indices(len(cands), args.rescore, seed=12345))
    out = {"rows": len(cands), "resamples": args.resamples, "rescored": args.rescore, "metrics": {}}
    for name in args.metrics.split(","):
        cls = family_for(name)
        texts = tok if cls.text_input == "tokenized" else (cands, refs)
        t0 = time.process_time()
        with cls() as m:
            stats = m.statistics(*texts)
        dist = corpus_distribution(stats, name, n_resamples=args.resamples, seed=12345)
        on_stats = time.process_time() - t0
        t0 = time.process_time()
        again = [capeval.score([cands[i] for i in row], [refs[i] for i in row], [name]).corpus[name] for row in draws]
        rescored = (time.process_time() - t0) * args.resamples / args.rescore
        same = all(a == b for a, b in zip(again, dist[: args.rescore]))
        out["metrics"][name] = {"statistics_cpu_s": round(on_stats, 3), "rescoring_cpu_s_extrapolated": round(rescored, 3),
                                "ratio": round(rescored / on_stats, 2), "equal": same}
        print(name, out["metrics"][name], flush=True)
    dest = Path(__file__).parent / "results" / "bootstrap_statistics.json"
    dest.parent.mkdir(exist_ok=True)
    dest.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
