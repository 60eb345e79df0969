"""Streaming scale benchmark (issue 13): `capeval score` on 10k -> 1M synthetic rows.

For each size and ``--jobs`` value, runs

    capeval score --input rows_N.jsonl --metrics bleu4,rouge_l,cider_d --output out.jsonl -q [--jobs J]

in its own process and records wall time, CPU seconds (all processes), peak RSS of the main
process (``ru_maxrss``), peak summed RSS of the process tree (sampled every 0.2 s from /proc),
the largest CIDEr df table seen in the run folder, throughput and the load average around it.

Checks (``--check-rows``): the in-memory run (`capeval.score` + the row-file writer, in its own
process) and the streamed ``--jobs 1``, ``--jobs 2`` and ``--engine ray`` runs give the same
output bytes (SHA-256 of the row file and of the signatures file), and each streamed run's CPU
seconds over the in-memory run's (``cpu_vs_in_memory``; issue 26 asks <= 1.5 for ``--jobs 1``
at 100,000 rows); and on ``--oracle-rows`` rows
the streamed per-row and corpus scores `==` pycocoevalcap 1.2 (its BLEU, ROUGE-L and CIDEr-D
scorers fed capeval's PTB tokens, as tests/metrics do). Per-chunk costs of the two chunk
functions are timed in-process on ``--chunk-rows`` rows.

Inputs come from ``stream_synth.py`` (seeded; row i depends only on the seed and i, so each
size is a prefix of the largest). Writes ``benchmarks/results/stream_scale.json``.

    python benchmarks/stream_scale.py --sizes 10000,100000,1000000 --jobs 1,2 --workdir /tmp/stream_bench

``--metrics`` scores other metrics (every family that streams: ``--metrics coco`` includes
METEOR, ``coco,spice`` SPICE-py); the pycocoevalcap check then covers the default three only and
is skipped.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
METRICS = "bleu4,rouge_l,cider_d"


def sha256(p: Path) -> str:
    h = hashlib.sha256()
    with p.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def ensure_rows(workdir: Path, n: int, largest: int, seed: int) -> Path:
    """``rows_{n}.jsonl`` (the first n rows of the seeded largest file). Files are written to a
    temporary name and renamed, and a kept file's line count is checked, so a run killed while
    generating never leaves a short file that a later run would silently reuse."""
    from stream_synth import write_jsonl

    def complete(path: Path, rows: int) -> bool:
        if not path.exists():
            return False
        with path.open("rb") as fh:
            return sum(1 for _ in fh) == rows

    p = workdir / f"rows_{n}.jsonl"
    if complete(p, n):
        return p
    big = workdir / f"rows_{largest}.jsonl"
    if not complete(big, largest):
        tmp = big.with_suffix(".jsonl.tmp")
        write_jsonl(tmp, largest, seed)
        os.replace(tmp, big)
    if n != largest:
        tmp = p.with_suffix(".jsonl.tmp")
        with big.open("rb") as src, tmp.open("wb") as dst:
            for i, line in enumerate(src):
                if i == n:
                    break
                dst.write(line)
        os.replace(tmp, p)
    return p


_TICK = os.sysconf("SC_CLK_TCK")


def _tree(root: int) -> dict[int, tuple[int, float]]:
    """``pid -> (VmRSS kB, CPU seconds)`` of ``root`` and its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    info: dict[int, tuple[int, float]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{d}/status") as f:
                kb = next((int(x.split()[1]) for x in f if x.startswith("VmRSS:")), 0)
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(d))
        info[int(d)] = (kb, (int(fields[11]) + int(fields[12])) / _TICK)
    out, stack = {}, [root]
    while stack:
        p = stack.pop()
        if p in info:
            out[p] = info[p]
        stack.extend(children.get(p, []))
    return out


def run_measured(cmd: list[str], run_dir: Path | None = None) -> dict:
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = {"tree_kb": 0, "df_bytes": 0}
    cpu: dict[int, float] = {}
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            tree = _tree(proc.pid)
            peak["tree_kb"] = max(peak["tree_kb"], sum(kb for kb, _ in tree.values()))
            for pid, (_, c) in tree.items():
                cpu[pid] = max(cpu.get(pid, 0.0), c)
            if run_dir is not None:
                try:
                    peak["df_bytes"] = max(peak["df_bytes"], sum(
                        (run_dir / f).stat().st_size for f in ("df_keys.npy", "df_counts.npy")))
                except OSError:
                    pass
            stop.wait(0.2)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    stop.set()
    th.join()
    err = proc.stderr.read().decode(errors="replace")
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-3000:]}")
    return {
        "wall_s": round(wall, 2),
        # Worker processes are children of the forkserver, not always reaped into the main
        # process' rusage: CPU is also summed from /proc samples of the whole tree.
        "cpu_s": round(max(ru.ru_utime + ru.ru_stime, sum(cpu.values())), 2),
        "cpu_s_main_rusage": round(ru.ru_utime + ru.ru_stime, 2),
        "peak_rss_largest_process_mb": round(ru.ru_maxrss / 1024, 1),
        "peak_rss_tree_mb_sampled": round(peak["tree_kb"] / 1024, 1),
        "df_table_mb": round(peak["df_bytes"] / 2**20, 1),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }


def capeval_cmd(inp: Path, out: Path, *extra: str) -> list[str]:
    code = "from capeval.cli.main import main; main()"
    return [sys.executable, "-c", code, "score", "--input", str(inp), "--metrics", METRICS,
            "--output", str(out), "--overwrite", "-q", *extra]  # the work folder is reused across runs


IN_MEMORY = """
import sys
from capeval import score
from capeval.inputs import read_jsonl, write_result
ids, c, r = read_jsonl(sys.argv[1])
res = score(c, r, sys.argv[3].split(","), ids=ids)
write_result(res, sys.argv[2], ids)
"""


def oracle_check(rows: Path, n: int, workdir: Path) -> dict:
    """Streamed run on the first ``n`` rows (several chunks) == pycocoevalcap on the same rows."""
    import contextlib
    import io

    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    from capeval import score_stream
    from capeval.inputs import read_jsonl
    from capeval.text import tokenize_corpus

    sample = workdir / f"oracle_{n}.jsonl"
    with rows.open("rb") as src, sample.open("wb") as dst:
        for i, line in enumerate(src):
            if i == n:
                break
            dst.write(line)
    ids, cands, refs = read_jsonl(sample)
    ours = score_stream(sample, METRICS.split(","), chunk_size=max(1, n // 4), jobs=2)
    tc, tr = tokenize_corpus(cands, refs)
    gts = {i: list(r) for i, r in enumerate(tr)}
    res = {i: [c] for i, c in enumerate(tc)}
    with contextlib.redirect_stdout(io.StringIO()):
        b, bs = Bleu(4).compute_score(gts, res, verbose=0)
    r, rs = Rouge().compute_score(gts, res)
    c, cs = Cider().compute_score(gts, res)
    theirs = {"bleu4": (b[3], bs[3]), "rouge_l": (r, rs), "cider_d": (c, cs)}
    out = {}
    for m, (corpus, per) in theirs.items():
        out[m] = {"corpus_equal": float(corpus) == ours.corpus[m],
                  "per_caption_equal": [float(x) for x in per] == ours.per_caption[m].tolist()}
    return {"rows": n, "chunks": 4, "jobs": 2, "tokens": "capeval ptb (both sides)", "metrics": out}


def chunk_costs(rows: Path, chunk_rows: int) -> dict:
    """Median seconds of df_pass and score_pass on 5 chunks (df of the first 50k rows); the
    score pass is given the df pass's tokens, as a local-engine run gives them."""
    import statistics

    from capeval.stream.chunks import DfHandle, Settings, df_pass, score_pass
    from capeval.stream.dfstore import DfAccumulator
    from capeval.stream.readers import chunks, open_rows

    s = Settings(tuple(METRICS.split(",")), output_format="jsonl")
    acc = DfAccumulator()
    it = chunks(open_rows(rows), chunk_rows)
    got = []
    df_t = []
    for _ in range(max(5, 50_000 // chunk_rows)):
        c = next(it, None)
        if c is None:
            break
        t = time.perf_counter()
        part = df_pass(c, s, keep_tokens=True)  # as a local-engine run: scored with its tokens
        c.tokens = part.tokens
        df_t.append(time.perf_counter() - t)
        acc.add(part.keys, part.counts, part.n)
        got.append(c)
    dfo = acc.result()
    h = DfHandle("object", dfo, dfo.n_units)
    sc_t = []
    for c in got[:5]:
        t = time.perf_counter()
        r = score_pass(c, s, h)
        sc_t.append(time.perf_counter() - t)
    return {"chunk_rows": chunk_rows, "df_pass_s_median": round(statistics.median(df_t), 3),
            "score_pass_s_median": round(statistics.median(sc_t), 3),
            "result_bytes_per_chunk_jsonl": len(r.fragment), "df_grams_after_rows": [dfo.n_units, len(dfo)],
            "df_bytes_per_gram": 20}


def _use_metrics(names: str) -> None:
    """The runs' ``--metrics`` (set names such as ``coco`` expanded), for every helper here."""
    from capeval.metrics.registry import METRIC_SETS

    global METRICS
    METRICS = ",".join(dict.fromkeys(m for n in names.split(",") for m in METRIC_SETS.get(n.strip(), (n.strip(),))))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--jobs", default="1,2")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/stream_bench"))
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--check-rows", type=int, default=100_000, help="0 to skip the identity checks")
    ap.add_argument("--oracle-rows", type=int, default=2_000, help="0 to skip the pycocoevalcap check")
    ap.add_argument("--chunk-rows", type=int, default=2_000)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "stream_scale.json")
    ap.add_argument("--metrics", default=METRICS, help="-m of every run (default: %(default)s)")
    a = ap.parse_args(argv)
    _use_metrics(a.metrics)
    if a.metrics != "bleu4,rouge_l,cider_d":
        a.oracle_rows = 0  # pycocoevalcap's scorers of the default three only
    a.workdir.mkdir(parents=True, exist_ok=True)
    sizes = [int(x) for x in a.sizes.split(",")]
    jobs = [int(x) for x in a.jobs.split(",")]
    largest = max(sizes + [a.check_rows])
    report: dict = {
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "cli": f"capeval score --input rows_N.jsonl --metrics {METRICS} --output out.jsonl -q [--jobs J]",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "generator": f"benchmarks/stream_synth.py seed {a.seed} (5 unique references per row)",
        "note": ("wall times include contention from other work on the machine: the load average "
                 "before and after each run is recorded; CPU seconds are robust to it"),
        "runs": [], "checks": {},
    }
    if a.oracle_rows:
        src = ensure_rows(a.workdir, max(a.oracle_rows, sizes[0]), largest, a.seed)
        report["checks"]["pycocoevalcap"] = oracle_check(src, a.oracle_rows, a.workdir)
        print("oracle", json.dumps(report["checks"]["pycocoevalcap"]), flush=True)
    report["per_chunk"] = chunk_costs(ensure_rows(a.workdir, sizes[0], largest, a.seed), a.chunk_rows)
    print("per chunk", report["per_chunk"], flush=True)
    if a.check_rows:
        inp = ensure_rows(a.workdir, a.check_rows, largest, a.seed)
        outs = {}
        mem = a.workdir / f"mem_{a.check_rows}.jsonl"
        m = run_measured([sys.executable, "-c", IN_MEMORY, str(inp), str(mem), METRICS])
        outs["in-memory (capeval.score)"] = (mem, m)
        for label, extra in (("streamed --jobs 1", ()), ("streamed --jobs 2", ("--jobs", "2")),
                             ("streamed --engine ray --jobs 2", ("--engine", "ray", "--jobs", "2"))):
            o = a.workdir / f"check_{label.split()[-1]}_{label.split()[1]}.jsonl"
            outs[label] = (o, run_measured(capeval_cmd(inp, o, *extra)))
        digests = {k: {"rows": sha256(p), "signatures": sha256(p.with_suffix(".signatures.json")), **m}
                   for k, (p, m) in outs.items()}
        ref = digests["in-memory (capeval.score)"]
        report["checks"]["byte_identical"] = {
            "rows": a.check_rows,
            "all_equal": all(d["rows"] == ref["rows"] and d["signatures"] == ref["signatures"] for d in digests.values()),
            "runs": digests,
        }
        # Issue 26, item 5: streamed --jobs 1 within 1.5x the CPU of in-memory scoring.
        report["checks"]["cpu_vs_in_memory"] = {
            "target_streamed_jobs1": 1.5,
            **{k: round(d["cpu_s"] / ref["cpu_s"], 2) for k, d in digests.items() if k.startswith("streamed")},
        }
        print("identity", json.dumps(report["checks"]["byte_identical"], indent=1), flush=True)
        print("CPU vs in-memory", json.dumps(report["checks"]["cpu_vs_in_memory"]), flush=True)
    for n in sizes:
        inp = ensure_rows(a.workdir, n, largest, a.seed)
        for j in jobs:
            out = a.workdir / f"out_{n}_j{j}.jsonl"
            m = run_measured(capeval_cmd(inp, out, "--jobs", str(j)),
                             run_dir=out.with_name(out.name + ".capeval-run"))
            m.update(rows=n, jobs=j, rows_per_s=round(n / m["wall_s"], 1), rows_per_cpu_s=round(n / m["cpu_s"], 1),
                     output_sha256=sha256(out))
            report["runs"].append(m)
            print(json.dumps(m), flush=True)
            a.out.parent.mkdir(parents=True, exist_ok=True)
            a.out.write_text(json.dumps(report, indent=1) + "\n")
    a.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
