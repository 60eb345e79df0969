"""Run every fuzz target of tests/fuzz/targets.py with a large randomized budget and record how
many inputs were tried, how they ended (computed, or refused with which named error) and how
many failed (a raw traceback or a wrong result; expected 0).

    python benchmarks/fuzz_counts.py [--scale 1.0] [--seed 20261125] [--only score,reader_csv]

Writes benchmarks/results/fuzz.json; docs/RELIABILITY.md ("Fuzzing and fault injection")
quotes it. The CI suite (tests/fuzz/test_fuzz.py) runs the same targets with small,
derandomized budgets.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

#: Examples per target at --scale 1 (about 3.5 CPU-minutes in all on the project machine).
BUDGET = {
    "score": 4000, "score_meteor": 400, "score_stream": 1000,
    "reader_jsonl": 2000, "reader_jsonl_garbage": 2000, "reader_csv": 2000, "reader_tsv": 2000,
    "reader_table_garbage": 2000, "reader_parquet": 1500, "reader_coco": 2000,
    "meta_correlation": 4000, "meta_bootstrap": 2500, "meta_williams": 4000, "meta_pairwise": 4000,
    "compat_pycocoevalcap": 1000, "compat_fork_df": 2000,
}


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="Multiply every budget.")
    ap.add_argument("--seed", type=int, default=20261125, help="Hypothesis seed (the run is reproducible).")
    ap.add_argument("--only", help="Comma-separated target names.")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "fuzz.json")
    a = ap.parse_args(argv)

    import hypothesis

    import capeval
    from tests.fuzz.targets import OUTCOMES, TARGETS, run_target

    names = a.only.split(",") if a.only else list(TARGETS)
    missing = [n for n in TARGETS if n not in BUDGET]
    if missing:
        raise SystemExit(f"no budget for {missing}")
    load_before = os.getloadavg()
    report: dict = {
        "command": "python benchmarks/fuzz_counts.py" + (f" --scale {a.scale}" if a.scale != 1 else "")
                   + (f" --only {a.only}" if a.only else ""),
        "capeval": capeval.__version__,
        "commit": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                 text=True).stdout.strip(),
        "hypothesis": hypothesis.__version__, "python": platform.python_version(), "seed": a.seed,
        "load_before": [round(x, 2) for x in load_before],
        "property": "a correct result or a capeval named error (CapevalError); no other exception, "
                    "no wrong result (reader round trips exact, rows reversed -> scores reversed, "
                    "statistics finite and in range, streamed == in-memory)",
        "targets": {},
    }
    total_failures = 0
    for name in names:
        budget = max(1, int(BUDGET[name] * a.scale))
        t0, c0 = time.perf_counter(), _cpu()
        failure = None
        try:
            run_target(name, budget, derandomize=False, seed=a.seed)
        except BaseException as e:  # a failing property: record it, go on with the others
            if isinstance(e, KeyboardInterrupt):
                raise
            failure = f"{type(e).__name__}: {str(e)[:2000]}"
        outcomes = dict(OUTCOMES.get(name, {}))
        tried = outcomes.pop("examples", 0)
        report["targets"][name] = {
            "what": TARGETS[name].what,
            "max_examples": budget,
            "examples_tried": tried,
            "failures": 0 if failure is None else 1,
            "failure": failure,
            "outcomes": dict(sorted(outcomes.items(), key=lambda kv: -kv[1])),
            "cpu_s": round(_cpu() - c0, 1),
            "wall_s": round(time.perf_counter() - t0, 1),
        }
        total_failures += failure is not None
        print(f"{name}: {tried} inputs, {'FAILED ' + failure[:200] if failure else '0 failures'}", flush=True)
    report["examples_tried"] = sum(t["examples_tried"] for t in report["targets"].values())
    report["failures"] = total_failures
    report["cpu_s"] = round(sum(t["cpu_s"] for t in report["targets"].values()), 1)
    report["load_after"] = [round(x, 2) for x in os.getloadavg()]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(f"{report['examples_tried']} inputs, {total_failures} failing target(s), {report['cpu_s']} CPU s "
          f"-> {a.out}")
    return 1 if total_failures else 0


if __name__ == "__main__":
    sys.exit(main())
