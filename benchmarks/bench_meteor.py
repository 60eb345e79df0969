"""capeval's METEOR jar backend vs pycocoevalcap's ``Meteor().compute_score`` on Flickr8k-Expert
(the native backend: bench_meteor_native.py).

Both sides get the same 16,992 rows (PROTOCOLS.md §14.2: one row per expert judgment,
whitespace-normalised, PTB-tokenized by pycocoevalcap's PTBTokenizer). Each side runs in its
own fresh Python process so that peak RSS (Python + JVM children) is measured separately.
Times are wall-clock and include starting the JVM(s), as a user would experience them.

    python benchmarks/bench_meteor.py [--rows N] [--workers W] [--result PATH]

Writes benchmarks/results/meteor.json (default workers) and, by hand,
benchmarks/results/meteor_workers2.json (``--workers 2``).
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

from _common import expert_rows  # noqa: E402  (scripts run from benchmarks/)

HERE = Path(__file__).resolve().parent


def ptb_coco(cands, refs):
    """Tokenize as pycocoevalcap's scorers see their input."""
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    tok = PTBTokenizer()
    gts = tok.tokenize({i: [{"caption": r} for r in rs] for i, rs in enumerate(refs)})
    res = tok.tokenize({i: [{"caption": c}] for i, c in enumerate(cands)})
    return gts, res


def _cpu_seconds() -> float:
    """CPU time of this process plus its finished children (the JVMs)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run_side(side: str, n: int | None, workers: int | None, out: Path) -> None:
    cands, refs = expert_rows(n)
    gts, res = ptb_coco(cands, refs)
    cpu0 = _cpu_seconds()
    t0 = time.perf_counter()
    if side == "ref":
        from pycocoevalcap.meteor.meteor import Meteor as RefMeteor

        m = RefMeteor()
        corpus, per = m.compute_score(gts, res)
        elapsed = time.perf_counter() - t0
        del m  # its __del__ kills the JVM, so the child's RSS is collected below
        extra = {}
    else:
        from capeval.metrics.meteor import Meteor

        tc = [res[i][0] for i in range(len(cands))]
        tr = [gts[i] for i in range(len(cands))]
        with Meteor(backend="jar", workers=workers) as m:
            r = m.compute(tc, tr)
            elapsed = time.perf_counter() - t0
            corpus, per = r.corpus["meteor"], r.per_caption["meteor"].tolist()
            extra = {"workers": len(m._procs), "distinct_units": r.details["distinct_units"],
                     "signature_fields": {k: str(v) for k, v in r.signature_fields.items()}}
    cpu = _cpu_seconds() - cpu0  # the JVMs are closed (waited for) by now, so they count
    out.write_text(json.dumps({
        "seconds": elapsed,
        "cpu_seconds": cpu,
        "corpus": corpus,
        "per_unit": [float(x) for x in per],
        # ru_maxrss is KiB on Linux; children = the largest JVM.
        "peak_rss_mib_python": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_rss_mib_largest_jvm": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        **extra,
    }))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=None, help="first N rows only (default: all 16,992)")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--result", type=Path, default=HERE / "results" / "meteor.json",
                    help="where to write the JSON (default benchmarks/results/meteor.json)")
    ap.add_argument("--side", choices=["ours", "ref"], help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side:
        run_side(args.side, args.rows, args.workers, args.out)
        return

    load_start = os.getloadavg()
    sides = {}
    with tempfile.TemporaryDirectory() as tmp:
        for side in ("ref", "ours"):
            path = Path(tmp) / f"{side}.json"
            cmd = [sys.executable, __file__, "--side", side, "--out", str(path)]
            if args.rows:
                cmd += ["--rows", str(args.rows)]
            if args.workers:
                cmd += ["--workers", str(args.workers)]
            subprocess.run(cmd, check=True)
            sides[side] = json.loads(path.read_text())
    ref, ours = sides["ref"], sides["ours"]
    diffs = [abs(a - b) for a, b in zip(ref["per_unit"], ours["per_unit"])]
    result = {
        "benchmark": "METEOR 1.5 (coco jar) on Flickr8k-Expert rows, PTB-tokenized",
        "rows": len(ref["per_unit"]),
        "distinct_units": ours["distinct_units"],
        "workers": ours["workers"],
        "pycocoevalcap_seconds": round(ref["seconds"], 3),
        "capeval_seconds": round(ours["seconds"], 3),
        "speedup": round(ref["seconds"] / ours["seconds"], 2),
        "pycocoevalcap_cpu_seconds": round(ref["cpu_seconds"], 3),
        "capeval_cpu_seconds": round(ours["cpu_seconds"], 3),
        "cpu_ratio": round(ref["cpu_seconds"] / ours["cpu_seconds"], 2),
        # The machine may be shared: wall times inflate with load, CPU seconds much less.
        "load_average_at_start": load_start,
        "load_average_at_end": os.getloadavg(),
        "per_unit_max_abs_diff": max(diffs),
        "per_unit_identical": ref["per_unit"] == ours["per_unit"],
        "corpus_pycocoevalcap": ref["corpus"],
        "corpus_capeval": ours["corpus"],
        "corpus_abs_diff": abs(ref["corpus"] - ours["corpus"]),
        "peak_rss_mib": {
            "pycocoevalcap": {"python": round(ref["peak_rss_mib_python"], 1),
                              "largest_jvm": round(ref["peak_rss_mib_largest_jvm"], 1)},
            "capeval": {"python": round(ours["peak_rss_mib_python"], 1),
                        "largest_jvm": round(ours["peak_rss_mib_largest_jvm"], 1)},
        },
        "signature_fields": ours["signature_fields"],
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "command": "python benchmarks/bench_meteor.py" + (f" --rows {args.rows}" if args.rows else "")
        + (f" --workers {args.workers}" if args.workers else ""),
    }
    out = args.result
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
