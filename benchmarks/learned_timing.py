"""Time ``capeval score -m learned`` on the 16,992 Flickr8k-Expert rows (cold: no score cache).

    python benchmarks/learned_timing.py [--model default|mpnet|FILE] [--out benchmarks/results/learned_timing.json]

The rows are written to a temporary JSONL file and scored by the CLI in a fresh process (its
peak RSS is the child's ``ru_maxrss``). A second run scores ``learned`` together with the
metrics it is built from, to show they are computed once. Record the machine load with the
result: on a shared machine the wall time is an upper bound.
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

from capeval import data
from capeval._version import __version__

RESULTS = Path(__file__).with_name("results")


def run(path: Path, metrics: str, out: Path, options: list[str] = ()) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    load = os.getloadavg()
    t0 = time.perf_counter()
    opts = [a for o in options for a in ("-O", o)]
    proc = subprocess.run([sys.executable, "-m", "capeval.cli.main", "score", "--input", str(path), "--metrics",
                           metrics, "--output", str(out), *opts], capture_output=True, text=True,
                          env={**os.environ, "CAPEVAL_CACHE": str(out.parent / "cache")})
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-2000:])
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"metrics": metrics, "options": list(options), "seconds": round(seconds, 1), "load_average_before": load,
            "peak_rss_mib": round(max(rss, before) / 1024, 1), "peak_rss_is_lower_bound_of_child": rss == before}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="default", help="shipped model alias (default, mpnet) or a model file")
    ap.add_argument("--out", type=Path, default=None, help="default: results/learned_timing[_<model>].json")
    args = ap.parse_args(argv)
    out_path = args.out or RESULTS / ("learned_timing.json" if args.model == "default"
                                      else f"learned_timing_{Path(args.model).stem}.json")
    options = [] if args.model == "default" else [f"learned.model={args.model}"]
    table = data.load("flickr8k-expert")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "expert.jsonl"
        with path.open("w") as fh:
            for i, (c, r) in enumerate(zip(table.candidates, table.references)):
                fh.write(json.dumps({"id": i, "candidate": c, "references": list(r)}) + "\n")
        runs = [run(path, "learned", Path(tmp) / "a.json", options),
                run(path, "learned,bleu4,rouge_l,cider_d,bertscore_f,sentsim_centroid,spice", Path(tmp) / "b.json",
                    options)]
    res = {"capeval": __version__, "python": platform.python_version(), "model": args.model, "rows": len(table),
           "cpus": os.cpu_count(), "load_average_at_end": os.getloadavg(), "runs": runs}
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
