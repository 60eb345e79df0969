"""SPICE-py speed (issue 26, item 1), each side in a fresh process, side by side in one run.

Sides, on one COCO Karpathy-test system (Tanti et al.'s merge_1: 5,000 rows x 5 references)
and then on a second one (merge_2) whose references the first run parsed:

  uncached   SPICE-py as before the parse cache: ``parse_cache=False``, one process; the
             reference for the outputs and for the ratio;
  cold       an empty parse cache (a fresh directory) and ``n_process=--jobs``: every
             distinct text is parsed (target >= 500 rows/s);
  warm       a fresh process on merge_2 with the cache the cold run filled (its references
             parsed; target >= 2,000 rows/s); ``uncached`` runs on merge_2 too.

Flickr8k-Expert (16,992 rows) gets an uncached and a cold run as well; its tau_c must stay
45.13. Every side scores ``spice`` and its six subsets with capeval's PTB tokenizer (the
default of ``capeval.score``) and saves per-row values; the report says whether every side's
values are identical (``==``, NaN equal to NaN) to the uncached side's on the same rows.

Timings: ``seconds`` from before ``import capeval`` to having the scores (the fresh-process
figure the targets are about), ``score_seconds`` for the ``capeval.score`` call alone, CPU
seconds of the process and its children (the forked parse workers), peak RSS, and the load
average before and after each side. The spaCy pipeline and WordNet data files are shared
with the rest of the machine's caches ($CAPEVAL_CACHE), only the parse cache is fresh.

    python benchmarks/bench_spice_speed.py [--jobs 2] [--rows N] [--workloads coco,expert]

Writes benchmarks/results/spice_speed.json (or --out).
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

HERE = Path(__file__).resolve().parent
OUTPUTS = ["spice", "spice_object", "spice_attribute", "spice_relation", "spice_color", "spice_count",
           "spice_size"]


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def _rows(workload: str, rows: int | None):
    import capeval.data

    if workload == "expert":
        t = capeval.data.load("flickr8k-expert")
        cands, refs, human = list(t.candidates), [list(r) for r in t.references], list(t.human)
    else:
        t = capeval.data.load("tanti-coco")
        cands, refs, human = list(t.systems[workload]), [list(r) for r in t.references], None
    if rows:
        cands, refs = cands[:rows], refs[:rows]
        human = human[:rows] if human is not None else None
    return cands, refs, human


def child(args) -> None:
    t0, c0 = time.perf_counter(), _cpu()
    import numpy as np

    import capeval

    cands, refs, human = _rows(args.workload, args.rows)
    opts = {"parse_cache": args.cache if args.cache else False, "n_process": args.jobs}
    t1 = time.perf_counter()
    res = capeval.score(cands, refs, metrics=OUTPUTS, options={"spice": opts})
    t2, c2 = time.perf_counter(), _cpu()
    np.savez(args.out.with_suffix(".npz"), **{k: np.asarray(v) for k, v in res.per_caption.items()})
    out = {"rows": len(cands), "seconds": t2 - t0, "score_seconds": t2 - t1, "cpu_seconds": c2 - c0,
           "rows_per_s": len(cands) / (t2 - t0), "peak_rss_mib": round(
               resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
           "stats": res.details["spice"]["stats"], "signature": res.signatures["spice"],
           "corpus_spice": res.corpus["spice"]}
    if human is not None:
        from scipy.stats import kendalltau

        out["tau_c"] = 100.0 * float(kendalltau(res.per_caption["spice"], human, variant="c")[0])
    args.out.write_text(json.dumps(out))


def run_side(name: str, workload: str, cache: str | None, jobs: int, rows: int | None, tmp: Path) -> dict:
    out = tmp / f"{name}-{workload}.json"
    cmd = [sys.executable, __file__, "--child", "--workload", workload, "--jobs", str(jobs), "--out", str(out)]
    if cache:
        cmd += ["--cache", cache]
    if rows:
        cmd += ["--rows", str(rows)]
    before = os.getloadavg()[0]
    subprocess.run(cmd, check=True)
    r = json.loads(out.read_text())
    r.update(side=name, workload=workload, jobs=jobs, load_before=round(before, 2),
             load_after=round(os.getloadavg()[0], 2), _npz=str(out.with_suffix(".npz")))
    print(json.dumps({k: v for k, v in r.items() if k not in ("stats", "signature", "_npz")}), flush=True)
    return r


def identical(a: str, b: str) -> bool:
    import numpy as np

    x, y = np.load(a), np.load(b)
    return set(x.files) == set(y.files) and all(np.array_equal(x[k], y[k], equal_nan=True) for k in x.files)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2, help="parse processes of the cold and warm sides")
    ap.add_argument("--rows", type=int, default=None, help="first N rows of each table (a quick check)")
    ap.add_argument("--workloads", default="coco,expert")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "spice_speed.json")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--workload", help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return 0
    todo = args.workloads.split(",")
    report: dict = {"benchmark": "SPICE-py speed: parse cache and parse processes vs the uncached path",
                    "targets": {"coco_cold_rows_per_s": 500, "coco_warm_rows_per_s": 2000,
                                "expert_tau_c": 45.13},
                    "jobs": args.jobs, "rows": args.rows, "load_average_at_start": os.getloadavg(),
                    "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                "platform": platform.platform()},
                    "sides": []}
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        sides = report["sides"]
        if "coco" in todo:
            cache = str(tmp / "parse-cache-coco")
            sides.append(run_side("uncached", "merge_1", None, 1, args.rows, tmp))
            sides.append(run_side("cold", "merge_1", cache, args.jobs, args.rows, tmp))
            sides.append(run_side("uncached", "merge_2", None, 1, args.rows, tmp))
            sides.append(run_side("warm", "merge_2", cache, args.jobs, args.rows, tmp))
        if "expert" in todo:
            cache = str(tmp / "parse-cache-expert")
            sides.append(run_side("uncached", "expert", None, 1, args.rows, tmp))
            sides.append(run_side("cold", "expert", cache, args.jobs, args.rows, tmp))
            sides.append(run_side("warm", "expert", cache, args.jobs, args.rows, tmp))
        ref = {s["workload"]: s for s in sides if s["side"] == "uncached"}
        for s in sides:
            base = ref[s["workload"]]
            s["identical_to_uncached"] = identical(s["_npz"], base["_npz"])
            s["speedup_vs_uncached"] = round(base["seconds"] / s["seconds"], 2)
        for s in sides:
            del s["_npz"]
    report["all_identical"] = all(s["identical_to_uncached"] for s in sides)
    report["load_average_at_end"] = os.getloadavg()
    report["command"] = "python benchmarks/bench_spice_speed.py" + " ".join(
        [""] + [f"--{k} {v}" for k, v in (("jobs", args.jobs), ("rows", args.rows)) if v and (k != "jobs" or v != 2)]
        + ([f"--workloads {args.workloads}"] if args.workloads != "coco,expert" else []))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"all identical: {report['all_identical']}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
