"""capeval's native METEOR vs pycocoevalcap's ``Meteor().compute_score`` on Flickr8k-Expert.

The 16,992 rows (PROTOCOLS.md §14.2) are PTB-tokenized once, in the parent process, with
pycocoevalcap's tokenizer, as its scorers see them; every side then runs in its own fresh
Python process (so the native sides start no JVM at all), timed from constructing the scorer
(pycocoevalcap: starting the JVM, which loads the paraphrase table; native: loading its
resources) to having every score:

* ``pycocoevalcap``: its ``Meteor`` (one JVM, one SCORE round trip per row, one EVAL);
* ``native_cold``: an empty ``$CAPEVAL_CACHE``, so the one-time conversion of the jar's
  resources (paraphrase table included) is timed;
* ``native_warm``: the converted resources already cached (every later run); run
  ``--warm-runs`` times (default 3), each in a fresh process, the median reported (all runs
  are kept in ``native_warm_runs``): a 2-second run is easily disturbed on a shared machine.

Wall and CPU seconds (CPU includes finished child processes, i.e. the JVM) and peak RSS are
recorded, with the load average: on a shared machine wall times inflate with load.

    python benchmarks/bench_meteor_native.py [--rows N] [--warm-runs K] [--result PATH]
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
from bench_meteor import _cpu_seconds, ptb_coco  # noqa: E402

HERE = Path(__file__).resolve().parent


def run_side(side: str, rows: Path, out: Path) -> None:
    tok = json.loads(rows.read_text())
    gts = {i: r for i, r in enumerate(tok["refs"])}
    res = {i: [c] for i, c in enumerate(tok["cands"])}
    n = len(tok["cands"])
    extra: dict = {}
    load = os.getloadavg()
    if side == "pycocoevalcap":
        from pycocoevalcap.meteor.meteor import Meteor as RefMeteor

        cpu0, t0 = _cpu_seconds(), time.perf_counter()
        m = RefMeteor()
        corpus, per = m.compute_score(gts, res)
        elapsed = time.perf_counter() - t0
        del m  # its __del__ kills the JVM, so the child's CPU and RSS are collected below
    else:
        from capeval.metrics._meteor_native import load as load_resources
        from capeval.metrics.meteor import Meteor

        tc = [res[i][0] for i in range(n)]
        tr = [gts[i] for i in range(n)]
        cpu0, t0 = _cpu_seconds(), time.perf_counter()
        m = Meteor(backend="native")
        load_resources()  # what compute would do first; timed apart as well
        t_res = time.perf_counter() - t0
        r = m.compute(tc, tr)
        elapsed = time.perf_counter() - t0
        corpus, per = r.corpus["meteor"], r.per_caption["meteor"].tolist()
        extra = {"distinct_units": r.details["distinct_units"], "resource_seconds": t_res,
                 "signature_fields": {k: str(v) for k, v in r.signature_fields.items()}}
    cpu = _cpu_seconds() - cpu0
    out.write_text(json.dumps({
        "seconds": elapsed,
        "cpu_seconds": cpu,
        "corpus": corpus,
        "per_unit": [float(x) for x in per],
        "load_average_at_start": load,
        "peak_rss_mib_python": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_rss_mib_largest_child": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        **extra,
    }))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=None, help="first N rows only (default: all 16,992)")
    ap.add_argument("--warm-runs", type=int, default=3, help="warm runs, the median reported (default 3)")
    ap.add_argument("--result", type=Path, default=HERE / "results" / "meteor_native.json")
    ap.add_argument("--side", help=argparse.SUPPRESS)
    ap.add_argument("--tokenized", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side:
        run_side(args.side, args.tokenized, args.out)
        return

    sides = {}
    load_before = os.getloadavg()  # before any work of this benchmark: the machine's own load
    with tempfile.TemporaryDirectory() as tmp:
        cands, refs = expert_rows(args.rows)
        gts, res = ptb_coco(cands, refs)
        tokenized = Path(tmp) / "rows.json"
        tokenized.write_text(json.dumps({"cands": [res[i][0] for i in range(len(cands))],
                                         "refs": [gts[i] for i in range(len(cands))]}))
        load_start = os.getloadavg()
        cold_cache = Path(tmp) / "cache"
        warm_runs = []
        for side in ("pycocoevalcap", "native_cold", *["native_warm"] * max(1, args.warm_runs)):
            path = Path(tmp) / f"{side}.json"
            env = dict(os.environ)
            if side != "pycocoevalcap":
                env["CAPEVAL_CACHE"] = str(cold_cache)  # empty for the cold run, filled by it
            cmd = [sys.executable, __file__, "--side", side, "--tokenized", str(tokenized), "--out", str(path)]
            subprocess.run(cmd, check=True, env=env)
            if side == "native_warm":
                warm_runs.append(json.loads(path.read_text()))
            else:
                sides[side] = json.loads(path.read_text())
        sides["native_warm"] = sorted(warm_runs, key=lambda r: r["seconds"])[len(warm_runs) // 2]
    ref = sides["pycocoevalcap"]
    load_end = os.getloadavg()
    result = {
        "benchmark": "METEOR 1.5 on Flickr8k-Expert rows, PTB-tokenized: native (no Java) vs pycocoevalcap",
        "rows": len(ref["per_unit"]),
        "distinct_units": sides["native_warm"]["distinct_units"],
        "seconds": {k: round(v["seconds"], 3) for k, v in sides.items()},
        "cpu_seconds": {k: round(v["cpu_seconds"], 3) for k, v in sides.items()},
        "speedup_wall": {k: round(ref["seconds"] / sides[k]["seconds"], 2) for k in ("native_cold", "native_warm")},
        "speedup_cpu": {k: round(ref["cpu_seconds"] / sides[k]["cpu_seconds"], 2) for k in ("native_cold", "native_warm")},
        "resource_seconds": {k: round(sides[k]["resource_seconds"], 3) for k in ("native_cold", "native_warm")},
        "peak_rss_mib": {k: {"python": round(v["peak_rss_mib_python"], 1),
                             "largest_child": round(v["peak_rss_mib_largest_child"], 1)} for k, v in sides.items()},
        "native_warm_runs": [{"seconds": round(r["seconds"], 3), "cpu_seconds": round(r["cpu_seconds"], 3),
                              "load_average_at_start": r["load_average_at_start"]} for r in warm_runs],
        "per_unit_identical": all(v["per_unit"] == ref["per_unit"] for v in [*sides.values(), *warm_runs]),
        "per_unit_max_abs_diff": max(abs(a - b) for v in sides.values() for a, b in zip(v["per_unit"], ref["per_unit"])),
        "corpus": {k: v["corpus"] for k, v in sides.items()},
        "corpus_identical": all(v["corpus"] == ref["corpus"] for v in [*sides.values(), *warm_runs]),
        "load_average_before": load_before,
        "load_average_at_start": load_start,
        "load_average_at_end": load_end,
        "load_average_at_side_start": {k: v["load_average_at_start"] for k, v in sides.items()},
        # Timings count only with the 1-min load below 1.3 (2 shared cores). Readings after
        # the first include this benchmark's own earlier steps (the tokenizer's JVM, then
        # pycocoevalcap's JVM, which keeps both cores busy), so the rule is applied to the
        # reading taken before any of them.
        "under_load": load_before[0] >= 1.3,
        "timed_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "signature_fields": sides["native_warm"]["signature_fields"],
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "command": "python benchmarks/bench_meteor_native.py" + (f" --rows {args.rows}" if args.rows else "")
                   + (f" --warm-runs {args.warm_runs}" if args.warm_runs != 3 else ""),
    }
    args.result.parent.mkdir(parents=True, exist_ok=True)
    args.result.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
