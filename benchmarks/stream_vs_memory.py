"""Streamed against in-memory scoring of ``coco,spice,bertscore_f`` (issue 34): CPU and peak memory.

The acceptance: streamed ``-m coco,spice,bertscore_f`` over N rows stays within 1.2x the CPU of
in-memory scoring, at a peak memory independent of the row count. For each size of
``--sizes`` (default ``--rows``/10 and ``--rows``, so the peak can be compared across sizes):

* in memory: ``capeval.score`` + the row-file writer in a fresh process (as stream_scale.py
  does; the CLI itself streams a .jsonl input whenever every metric streams, so
  ``capeval score -o mem.jsonl`` would not be an in-memory run);
* streamed: ``capeval score --input rows.jsonl -m ... --jobs J --chunk-size K -o out.jsonl``
  in a fresh process, for each ``--jobs`` value (default 1; ``--jobs 1,2`` adds 2 workers).

Each run's wall time, CPU seconds (the process' rusage with its reaped children, or the summed
/proc samples of the process tree when larger) and peak RSS (largest process, and the sampled
sum over the tree) come from ``stream_scale.run_measured``. The streamed output and its
signatures file must be byte-identical to the in-memory ones (SHA-256). Writes
``benchmarks/results/stream_vs_memory_<largest size>.json`` with the CPU ratios, the peak-RSS
ratio of the streamed runs between the largest and the smallest size, and the signatures.

BERTScore: bert_score's padding floor (``padding_floor=True``, capeval's default) depends on the
neighbouring rows, so it cannot stream; both sides run ``-O bertscore.padding_floor=false``
(the same variant on both sides, named in the signature). The encoder is ``--model`` (default
the packaged all-MiniLM-L6-v2, alias ``minilm``), recorded in the JSON.

Rows come from ``stream_synth.py`` (seeded; a unique candidate and 5 unique references per row,
each size a prefix of the largest). This script times its runs: run it on a quiet machine.

    python benchmarks/stream_vs_memory.py --rows 100000 [--sizes 10000,100000] [--chunk-size 10000]
        [--jobs 1,2] [--workdir /tmp/stream_vs_memory]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from stream_scale import ensure_rows, run_measured, sha256  # noqa: E402 - after the sys.path entry

METRICS = "coco,spice,bertscore_f"
#: Options of both sides: the BERTScore variant that streams, on the given encoder.
BERTSCORE = {"padding_floor": False}

IN_MEMORY = """
import json, sys
from capeval import score
from capeval.inputs import read_jsonl, write_result
ids, c, r = read_jsonl(sys.argv[1])
res = score(c, r, sys.argv[3].split(","), ids=ids, options=json.loads(sys.argv[4]))
write_result(res, sys.argv[2], ids)
"""


def expand(names: str) -> list[str]:
    """Set names (``coco``) expanded, as the CLI does, so both sides get one metric list."""
    from capeval.metrics.registry import METRIC_SETS

    return list(dict.fromkeys(m for n in names.split(",") for m in METRIC_SETS.get(n.strip(), (n.strip(),))))


def streamed_cmd(inp: Path, out: Path, metrics: list[str], options: dict, jobs: int, chunk: int) -> list[str]:
    code = "from capeval.cli.main import main; main()"
    opts = [x for fam, kv in options.items() for k, v in kv.items() for x in ("-O", f"{fam}.{k}={json.dumps(v)}")]
    return [sys.executable, "-c", code, "score", "--input", str(inp), "--metrics", ",".join(metrics), *opts,
            "--jobs", str(jobs), "--chunk-size", str(chunk), "--output", str(out), "--overwrite", "-q"]


def encoder_record(model: str) -> dict:
    from capeval.resources.encoders import resolve_encoder

    enc = resolve_encoder(model)
    return {"option": model, "name": enc.name, "location": enc.location, "layer": enc.default_layer,
            "layer_source": enc.layer_source}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000, help="largest size (default %(default)s)")
    ap.add_argument("--sizes", help="comma-separated row counts (default: rows/10,rows)")
    ap.add_argument("--chunk-size", type=int, default=10_000, help="rows per streamed chunk (default %(default)s)")
    ap.add_argument("--jobs", default="1", help="streamed --jobs values, e.g. 1,2 (default %(default)s)")
    ap.add_argument("--metrics", default=METRICS)
    ap.add_argument("--model", default="minilm", help="bertscore.model of both sides (default %(default)s)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/stream_vs_memory"))
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--out", type=Path, help="default benchmarks/results/stream_vs_memory_<largest>.json")
    a = ap.parse_args(argv)
    sizes = sorted({int(x) for x in a.sizes.split(",")}) if a.sizes else sorted({max(1, a.rows // 10), a.rows})
    jobs = [int(x) for x in a.jobs.split(",")]
    if min(sizes) < 1 or a.chunk_size < 1 or min(jobs) < 1:
        ap.error("--rows/--sizes, --chunk-size and --jobs must be positive")
    largest = max(sizes)
    metrics = expand(a.metrics)
    options = {"bertscore": {**BERTSCORE, "model": a.model}} if any(m.startswith("bertscore") for m in metrics) else {}
    if any(m.startswith("spice") for m in metrics):
        # SPICE-py's parse store on disk: the side run second would read the parses the first
        # wrote. Off on both sides, each parses every caption (same numbers and signature).
        options["spice"] = {"parse_cache": False}
    a.workdir.mkdir(parents=True, exist_ok=True)
    dest = a.out or HERE / "results" / f"stream_vs_memory_{largest}.json"
    report: dict = {
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "acceptance": "streamed CPU <= 1.2x in-memory CPU; streamed peak RSS independent of the row count",
        "in_memory": "capeval.score + capeval.inputs.write_result in a fresh process (the CLI streams this input)",
        "streamed": (f"capeval score --input rows_N.jsonl --metrics {','.join(metrics)} "
                     + " ".join(f"-O {f}.{k}={json.dumps(v)}" for f, kv in options.items() for k, v in kv.items())
                     + f" --jobs J --chunk-size {a.chunk_size} --output out.jsonl -q"),
        "metrics": metrics, "options_both_sides": options,
        "bertscore_variant": ("padding_floor=false on both sides: bert_score's padding floor (capeval's default) "
                              "depends on the neighbouring rows and cannot stream"),
        "encoder": encoder_record(a.model) if options else None,
        "chunk_size": a.chunk_size,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "generator": f"benchmarks/stream_synth.py seed {a.seed} (a unique candidate and 5 unique references per row)",
        "note": ("cpu_s: user+sys of the process and its children; wall times include other load on the "
                 "machine (load averages recorded)"),
        "sizes": {},
    }
    for n in sizes:
        inp = ensure_rows(a.workdir, n, largest, a.seed)
        mem = a.workdir / f"mem_{n}.jsonl"
        runs = {"in-memory": run_measured([sys.executable, "-c", IN_MEMORY, str(inp), str(mem), ",".join(metrics),
                                           json.dumps(options)])}
        files = {"in-memory": mem}
        for j in jobs:
            out = a.workdir / f"streamed_{n}_j{j}.jsonl"
            # a run folder left by a killed earlier run would be resumed, and its CPU not measured
            shutil.rmtree(out.with_name(out.name + ".capeval-run"), ignore_errors=True)
            runs[f"streamed --jobs {j}"] = run_measured(streamed_cmd(inp, out, metrics, options, j, a.chunk_size),
                                                        run_dir=out.with_name(out.name + ".capeval-run"))
            files[f"streamed --jobs {j}"] = out
        for k, p in files.items():
            runs[k].update(rows_sha256=sha256(p), signatures_sha256=sha256(p.with_suffix(".signatures.json")))
        ref = runs["in-memory"]
        entry = {
            "runs": runs,
            "byte_identical": all(r["rows_sha256"] == ref["rows_sha256"] and
                                  r["signatures_sha256"] == ref["signatures_sha256"] for r in runs.values()),
            "cpu_vs_in_memory": {k: round(r["cpu_s"] / ref["cpu_s"], 3) for k, r in runs.items() if k != "in-memory"},
        }
        report["sizes"][str(n)] = entry
        report["signatures"] = json.loads(mem.with_suffix(".signatures.json").read_text())
        print(n, json.dumps({"byte_identical": entry["byte_identical"], "cpu_vs_in_memory": entry["cpu_vs_in_memory"],
                             "peak_rss_tree_mb": {k: r["peak_rss_tree_mb_sampled"] for k, r in runs.items()}}),
              flush=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(json.dumps(report, indent=1) + "\n")
    if len(sizes) > 1:
        lo, hi = report["sizes"][str(sizes[0])]["runs"], report["sizes"][str(largest)]["runs"]
        report["peak_rss_largest_over_smallest"] = {
            "sizes": [sizes[0], largest],
            **{k: {"tree": round(hi[k]["peak_rss_tree_mb_sampled"] / lo[k]["peak_rss_tree_mb_sampled"], 3),
                   "largest_process": round(hi[k]["peak_rss_largest_process_mb"] / lo[k]["peak_rss_largest_process_mb"], 3)}
               for k in hi},
        }
    report["all_byte_identical"] = all(e["byte_identical"] for e in report["sizes"].values())
    dest.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: report.get(k) for k in ("all_byte_identical", "peak_rss_largest_over_smallest")}), flush=True)
    return 0 if report["all_byte_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
