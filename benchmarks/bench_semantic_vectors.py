"""WMD and WEmbSim: speed and agreement against the reference code, then meta-evaluation.

    python benchmarks/bench_semantic_vectors.py [--gensim-pairs N] [--no-meta]

Speed, on the 16,992 Flickr8k-Expert rows (PTB-tokenized once, beforehand, for both sides):
- capeval WMD (glove-6b-50d, Kilickaya recipe) vs the coco-caption WMD scorer's loop: one
  gensim ``KeyedVectors.wmdistance`` per (row, reference), 84,960 calls. gensim is timed on
  the distinct pairs (each computed once, which also checks every one of them) and its
  per-call rate gives the time of the full loop; ``--gensim-pairs N`` times N pairs only.
- capeval WEmbSim vs a per-pair loop written as LCEval's MOWE feature reads (mean vector,
  ``1 - scipy.spatial.distance.cosine``).
Agreement: max |capeval − reference| over distances, per-reference and per-row scores.

Meta-evaluation (``capeval.metaeval.run_benchmark``): Flickr8k-Expert τc, COMPOSITE τc and
PASCAL-50S accuracy for each vector set / option variant.

Writes benchmarks/results/semantic_vectors.json.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import math
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

VARIANTS = [
    # (label, metric, options)
    ("WMD glove-6b-50d (raw, Kilickaya)", "wmd", {"vectors": "glove-6b-50d"}),
    ("WMD glove-6b-50d (norm, gensim>=4 default)", "wmd", {"vectors": "glove-6b-50d", "norm": True}),
    ("WMD spacy-md (raw)", "wmd", {"vectors": "spacy-md"}),
    ("WEmbSim glove-6b-50d mean", "wembsim", {"vectors": "glove-6b-50d", "combine": "mean"}),
    ("WEmbSim glove-6b-50d max", "wembsim", {"vectors": "glove-6b-50d", "combine": "max"}),
    ("WEmbSim spacy-md mean", "wembsim", {"vectors": "spacy-md", "combine": "mean"}),
    ("WEmbSim spacy-md max", "wembsim", {"vectors": "spacy-md", "combine": "max"}),
]
BENCHMARKS = ["flickr8k-expert", "composite", "pascal50s"]


class Timer:
    """Wall and CPU seconds: the machine is shared, so CPU time is the steadier comparison."""

    def __enter__(self):
        self.w, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.w
        self.cpu = time.process_time() - self.c


def expert_tokens():
    from capeval.data import load
    from capeval.text import tokenize_corpus

    table = load("flickr8k-expert")
    t = time.perf_counter()
    cands, refs = tokenize_corpus(table.candidates, table.references, "ptb")
    return cands, refs, time.perf_counter() - t


def bench_wmd(cands, refs, gensim_pairs: int | None) -> dict:
    from capeval.metrics.wmd import WMD, _network_simplex
    from capeval.resources.vectors import load_vectors
    from capeval.text.stopwords import get_stopwords

    wv = load_vectors("glove-6b-50d")
    _network_simplex()  # POT import and solver check: one-time, outside the timing
    metric = WMD(vectors=wv)
    with Timer() as t_ours:
        ours = metric.compute(cands, refs)

    # The coco-caption scorer's tokens: split(' '), stop words removed; gensim drops OOV.
    stop = get_stopwords("nltk-153").words
    toks = lambda s: [w for w in s.split(" ") if w not in stop]  # noqa: E731
    row_pairs = [(c, r) for c, rs in zip(cands, refs) for r in rs]
    distinct = list(dict.fromkeys(row_pairs))
    sample = distinct if gensim_pairs is None else distinct[:gensim_pairs]

    from gensim.models import KeyedVectors

    logging.getLogger("gensim").setLevel(logging.ERROR)
    words = sorted({w for c, r in sample for w in toks(c) + toks(r) if w in wv})
    kv = KeyedVectors(vector_size=wv.dim)
    kv.add_vectors(words, wv.vectors(words))
    with Timer() as t_gensim:
        ref_d = {p: kv.wmdistance(toks(p[0]), toks(p[1]), norm=False) for p in sample}
    rate = len(sample) / t_gensim.wall
    rate_cpu = len(sample) / t_gensim.cpu

    from capeval.metrics.wmd import WMDScorer

    sc = WMDScorer(wv)
    our_d = sc.distances([(tuple(w for w in toks(c) if w in wv), tuple(w for w in toks(r) if w in wv))
                          for c, r in sample])
    ref_arr = np.array([ref_d[p] for p in sample])
    fin = np.isfinite(ref_arr)
    out = {
        "rows": len(cands),
        "row_reference_pairs": len(row_pairs),
        "distinct_text_pairs": len(distinct),
        "distinct_token_multiset_pairs": ours.details["distinct_pairs"],
        "capeval_seconds": t_ours.wall,
        "capeval_cpu_seconds": t_ours.cpu,
        "capeval_captions_per_s": len(cands) / t_ours.wall,
        "capeval_captions_per_cpu_s": len(cands) / t_ours.cpu,
        "gensim_pairs_timed": len(sample),
        "gensim_seconds_timed": t_gensim.wall,
        "gensim_cpu_seconds_timed": t_gensim.cpu,
        "gensim_pairs_per_s": rate,
        "gensim_pairs_per_cpu_s": rate_cpu,
        "gensim_reference_loop_seconds_est": len(row_pairs) / rate,
        "gensim_reference_loop_cpu_seconds_est": len(row_pairs) / rate_cpu,
        "gensim_captions_per_s_est": len(cands) / (len(row_pairs) / rate),
        "speedup_vs_reference_loop": (len(row_pairs) / rate) / t_ours.wall,
        "speedup_vs_reference_loop_cpu": (len(row_pairs) / rate_cpu) / t_ours.cpu,
        "speedup_vs_gensim_on_distinct_pairs": (len(distinct) / rate) / t_ours.wall,
        "speedup_vs_gensim_on_distinct_pairs_cpu": (len(distinct) / rate_cpu) / t_ours.cpu,
        "inf_agree": bool(np.array_equal(np.isinf(ref_arr), np.isinf(our_d))),
        "distance_max_abs_diff": float(np.max(np.abs(ref_arr[fin] - our_d[fin]))) if fin.any() else 0.0,
        "distance_bitwise_equal_fraction": float(np.mean(ref_arr[fin] == our_d[fin])) if fin.any() else 1.0,
        "signature": None,
    }
    if gensim_pairs is None:
        # Every distinct pair was computed by gensim: rebuild the reference scorer's rows.
        ref_rows = np.array([max(math.exp(-ref_d[(c, r)]) for r in rs) for c, rs in zip(cands, refs)])
        out["row_score_max_abs_diff"] = float(np.max(np.abs(ref_rows - ours.per_caption["wmd"])))
    from capeval.signature import Signature

    out["signature"] = str(Signature.make(WMD.variant, out="wmd", tok="ptb", **ours.signature_fields))
    return out


def bench_wembsim(cands, refs) -> dict:
    from scipy.spatial.distance import cosine

    from capeval.metrics.wembsim import WEmbSim, mowe_tokens
    from capeval.resources.vectors import load_vectors
    from capeval.signature import Signature
    from capeval.text.stopwords import get_stopwords

    wv = load_vectors("glove-6b-50d")
    metric = WEmbSim(vectors=wv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Timer() as t_ours:
            ours = metric.compute(cands, refs)

    stop = get_stopwords("nltk-153")
    loop = Timer().__enter__()
    ref_rows = []
    for c, rs in zip(cands, refs):
        ct = mowe_tokens(c, stop, wv)
        vc = np.mean(wv.vectors(ct).astype(np.float64), axis=0) if ct else None
        sims = []
        for r in rs:
            rt = mowe_tokens(r, stop, wv)
            vr = np.mean(wv.vectors(rt).astype(np.float64), axis=0) if rt else None
            sims.append(-1.0 if vc is None or vr is None else 1.0 - cosine(vc, vr))
        ref_rows.append(np.mean(sims))
    loop.__exit__()
    return {
        "rows": len(cands),
        "capeval_seconds": t_ours.wall,
        "capeval_cpu_seconds": t_ours.cpu,
        "capeval_captions_per_s": len(cands) / t_ours.wall,
        "pair_loop_seconds": loop.wall,
        "pair_loop_cpu_seconds": loop.cpu,
        "pair_loop_captions_per_s": len(cands) / loop.wall,
        "speedup_vs_pair_loop": loop.wall / t_ours.wall,
        "speedup_vs_pair_loop_cpu": loop.cpu / t_ours.cpu,
        "row_score_max_abs_diff": float(np.max(np.abs(np.array(ref_rows) - ours.per_caption["wembsim"]))),
        "signature": str(Signature.make(WEmbSim.variant, out="wembsim", tok="ptb", **ours.signature_fields)),
    }


def meta(variants) -> list[dict]:
    from capeval.service.cache import ScoreCache
    from capeval.metaeval.runner import run_benchmark

    rows = []
    cache = ScoreCache(enabled=False)
    for label, metric, opts in variants:
        row = {"label": label, "metric": metric, "options": opts}
        for name in BENCHMARKS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = time.perf_counter()
                res = run_benchmark(name, [metric], options={metric: opts}, cache=cache)
            exp = res.experiment
            if res.kind == "correlation":
                corr = exp.results[metric]
                row[name] = {"tau_c": 100 * corr["kendall_tau_c"].value, "tau_b": 100 * corr["kendall_tau_b"].value}
            else:
                acc = exp.results[metric].percent()
                row[name] = {k: float(v) for k, v in acc.items()}
                row[name]["ties"] = int(exp.results[metric].total_ties)
            row[name]["seconds"] = time.perf_counter() - t
            row[name]["benchmark_signature"] = str(res.signature())
            row["metric_signature"] = res.metric_signatures[metric]
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gensim-pairs", type=int, default=None,
                    help="time gensim on the first N distinct pairs only (default: all of them)")
    ap.add_argument("--no-meta", action="store_true", help="skip the meta-evaluation runs")
    ap.add_argument("--out", default=str(HERE / "results" / "semantic_vectors.json"))
    args = ap.parse_args()

    import capeval
    import gensim
    import ot

    cands, refs, t_tok = expert_tokens()
    result = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_avg_at_start": os.getloadavg()},
        "versions": {"capeval": capeval.__version__, "gensim": gensim.__version__, "POT": ot.__version__,
                     "numpy": np.__version__},
        "command": "python benchmarks/bench_semantic_vectors.py"
        + (f" --gensim-pairs {args.gensim_pairs}" if args.gensim_pairs else "")
        + (" --no-meta" if args.no_meta else ""),
        "ptb_tokenize_seconds": t_tok,
        "wmd": bench_wmd(cands, refs, args.gensim_pairs),
    }
    print(json.dumps(result["wmd"], indent=1), flush=True)
    result["wembsim"] = bench_wembsim(cands, refs)
    print(json.dumps(result["wembsim"], indent=1), flush=True)
    if not args.no_meta:
        result["meta"] = meta(VARIANTS)
    result["machine"]["load_avg_at_end"] = os.getloadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
