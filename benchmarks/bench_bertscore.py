"""capeval's BERTScore vs bert-score 0.3.13 on the 16,992 Flickr8k-Expert rows, side by side.

Both sides score the same rows (PROTOCOLS.md §14.2: one row per expert judgment, whitespace-
normalised raw text, the image's 5 references) with the packaged all-MiniLM-L6-v2 at layer 6,
on CPU. bert_score gets its defaults (batch_size 64, nthreads 4 for IDF) plus the local model
path and layer. Each side runs in its own fresh Python process, so each pays its own model load,
and its peak RSS is its own; imports are not timed. Sides alternate, ``--reps`` times each; the
report gives every wall-clock time, the fastest, and CPU seconds (process + children, e.g.
bert_score's IDF pool), which a busy shared machine disturbs less than wall-clock time.

    HF_HUB_OFFLINE=1 python benchmarks/bench_bertscore.py [--rows N] [--threads T] [--reps R]
                                                          [--idf both|off|on]

Writes benchmarks/results/bertscore.json (or --out), including the largest per-row difference
between the two sides for P, R and F.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import expert_rows  # noqa: E402  (scripts run from benchmarks/)

HERE = Path(__file__).resolve().parent
LAYER = 6


def run_side(side: str, n: int | None, idf: bool, threads: int | None, out: Path) -> None:
    """Child process: score with one implementation, save per-row P, R, F and timings."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    import transformers  # noqa: F401  (imported by bert_score at import; keep it out of both timings)

    if threads:
        torch.set_num_threads(threads)
    cands, refs = expert_rows(n)
    from capeval.resources.encoders import resolve_encoder

    location = resolve_encoder(None).location
    extra = {}
    cpu0 = _cpu_seconds()
    if side == "capeval":
        from capeval.metrics.bertscore import BERTScore

        t0 = time.perf_counter()
        res = BERTScore(num_layers=LAYER, idf=idf).compute(cands, refs)
        seconds = time.perf_counter() - t0
        prf = np.stack([res.per_caption[f"bertscore_{k}"] for k in "prf"], axis=1)
        extra = {"signature_fields": res.signature_fields, "min_best_cosine": res.details["min_best_cosine"]}
    else:
        import bert_score

        t0 = time.perf_counter()
        P, R, F = bert_score.score(cands, refs, model_type=location, num_layers=LAYER, idf=idf, device="cpu")
        seconds = time.perf_counter() - t0
        prf = np.stack([P.numpy(), R.numpy(), F.numpy()], axis=1).astype(np.float64)
    cpu = _cpu_seconds() - cpu0
    np.save(out.with_suffix(".npy"), prf)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out.write_text(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "threads": torch.get_num_threads(),
                               "peak_rss_mib": round(rss, 1), **extra}))


def _cpu_seconds() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _side(side: str, args, idf: bool, tmp: Path) -> tuple[dict, np.ndarray]:
    out = tmp / f"{side}-{int(idf)}.json"
    cmd = [sys.executable, __file__, "--child", side, "--idf", "on" if idf else "off", "--out", str(out)]
    if args.rows:
        cmd += ["--rows", str(args.rows)]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    subprocess.run(cmd, check=True)
    return json.loads(out.read_text()), np.load(out.with_suffix(".npy"))


def distinct_counts(cands, refs) -> dict:
    pairs = {(c, r) for c, rs in zip(cands, refs) for r in rs}
    return {
        "distinct_sentences": len(set(cands) | {r for rs in refs for r in rs}),
        "flattened_pairs": sum(len(rs) for rs in refs),
        "distinct_pairs": len(pairs),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads, both sides")
    ap.add_argument("--idf", choices=("both", "off", "on"), default="both")
    ap.add_argument("--reps", type=int, default=2, help="runs per side and mode (alternating)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "bertscore.json")
    ap.add_argument("--child", choices=("capeval", "bert_score"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        run_side(args.child, args.rows, args.idf == "on", args.threads, args.out)
        return 0

    import torch
    import transformers

    cands, refs = expert_rows(args.rows)
    n = len(cands)
    load_start = os.getloadavg()
    modes = {"both": (False, True), "off": (False,), "on": (True,)}[args.idf]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for idf in modes:
            runs: dict[str, list[dict]] = {"capeval": [], "bert_score": []}
            for _ in range(args.reps):
                ours, ours_prf = _side("capeval", args, idf, Path(tmp))
                ref, ref_prf = _side("bert_score", args, idf, Path(tmp))
                runs["capeval"].append(ours)
                runs["bert_score"].append(ref)
            wall = {k: min(r["seconds"] for r in v) for k, v in runs.items()}
            cpu = {k: min(r["cpu_seconds"] for r in v) for k, v in runs.items()}
            diff = np.abs(ours_prf - ref_prf).max(axis=0)
            results["idf" if idf else "no_idf"] = {
                "capeval_seconds": round(wall["capeval"], 2),
                "bert_score_seconds": round(wall["bert_score"], 2),
                "capeval_captions_per_s": round(n / wall["capeval"], 1),
                "bert_score_captions_per_s": round(n / wall["bert_score"], 1),
                "speedup": round(wall["bert_score"] / wall["capeval"], 2),
                "all_wall_seconds": {k: [round(r["seconds"], 2) for r in v] for k, v in runs.items()},
                "capeval_cpu_seconds": round(cpu["capeval"], 2),
                "bert_score_cpu_seconds": round(cpu["bert_score"], 2),
                "cpu_speedup": round(cpu["bert_score"] / cpu["capeval"], 2),
                "max_abs_diff": {k: float(d) for k, d in zip("PRF", diff)},
                "within_1e-6": bool((diff <= 1e-6).all()),
                "corpus_mean_capeval": {k: float(v) for k, v in zip("PRF", ours_prf.mean(axis=0))},
                "corpus_mean_bert_score": {k: float(v) for k, v in zip("PRF", ref_prf.mean(axis=0))},
                "peak_rss_mib": {"capeval": ours["peak_rss_mib"], "bert_score": ref["peak_rss_mib"]},
                "min_best_cosine": ours["min_best_cosine"],
                "signature_fields": ours["signature_fields"],
                "torch_threads": ours["threads"],
            }
            print(json.dumps(results["idf" if idf else "no_idf"], indent=1), flush=True)
    report = {
        "benchmark": "BERTScore (all-MiniLM-L6-v2, layer 6, CPU) on Flickr8k-Expert rows, raw text",
        "rows": n,
        **distinct_counts(cands, refs),
        "results": results,
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_at_start": [round(x, 2) for x in load_start],
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "platform": platform.platform(),
        },
        "note": "The machine is shared; load averages show how busy it was. Compare the two "
        "sides of one run, not runs of different days.",
        "command": "HF_HUB_OFFLINE=1 python benchmarks/bench_bertscore.py"
        + (f" --rows {args.rows}" if args.rows else "")
        + (f" --threads {args.threads}" if args.threads else "")
        + (f" --reps {args.reps}" if args.reps != 2 else "")
        + (f" --idf {args.idf}" if args.idf != "both" else ""),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
