"""Foundation speed: tokenize + BLEU-1..4 + ROUGE-L + CIDEr-D on the 16,992 Flickr8k-Expert rows,
capeval vs pycocoevalcap 1.2, side by side in one run; also checks the outputs are identical.

Each side runs in its own subprocess (so peak RSS is per side), alternating, ``--repeat``
times; the median wall time is reported. Writes ``benchmarks/results/foundation.json``.

    python benchmarks/bench_foundation.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import expert_rows  # noqa: E402  (scripts run from benchmarks/)

HERE = Path(__file__).resolve().parent


METRICS = ["bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d"]


def run_ours(cands, refs):
    import capeval

    t = time.perf_counter()
    r = capeval.score(cands, refs, METRICS, tokenizer="ptb")
    dt = time.perf_counter() - t
    return dt, {m: r.per_caption[m].tolist() for m in METRICS}, r.corpus


def run_ref(cands, refs):
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    t = time.perf_counter()
    gts = {i: [{"caption": r} for r in rs] for i, rs in enumerate(refs)}
    res = {i: [{"caption": c}] for i, c in enumerate(cands)}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        tok = PTBTokenizer()
        g = tok.tokenize(gts)
        r = tok.tokenize(res)
        b, bs = Bleu(4).compute_score(g, r, verbose=0)
        rl, rls = Rouge().compute_score(g, r)
        c, cs = Cider().compute_score(g, r)
    dt = time.perf_counter() - t
    per = {f"bleu{k + 1}": list(map(float, bs[k])) for k in range(4)}
    per["rouge_l"] = list(map(float, rls))
    per["cider_d"] = list(map(float, cs))
    corpus = {f"bleu{k + 1}": b[k] for k in range(4)}
    corpus.update(rouge_l=float(rl), cider_d=float(c))
    return dt, per, corpus


def _cpu() -> float:
    # CPU seconds of this process and its children (the reference tokenizes in a JVM):
    # robust to other load on a shared machine, unlike wall time.
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def child(side: str, out: str) -> None:
    cands, refs = expert_rows()
    c0 = _cpu()
    dt, per, corpus = (run_ours if side == "ours" else run_ref)(cands, refs)
    cpu = _cpu() - c0
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    Path(out).write_text(json.dumps({"seconds": dt, "cpu_seconds": cpu, "per": per, "corpus": corpus,
                                     "peak_rss_mb": rss_kb / 1024}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", choices=["ours", "ref"])
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.child:
        child(a.child, a.out)
        return
    times = {"ours": [], "ref": []}
    cpu = {"ours": [], "ref": []}
    last = {}
    for i in range(a.repeat):
        for side in ("ref", "ours"):
            tmp = HERE / "results" / f".{side}.tmp"
            subprocess.run([sys.executable, __file__, "--child", side, "--out", str(tmp)], check=True)
            last[side] = json.loads(tmp.read_text())
            tmp.unlink()
            times[side].append(last[side]["seconds"])
            cpu[side].append(last[side]["cpu_seconds"])
    identical = {m: last["ours"]["per"][m] == last["ref"]["per"][m] for m in METRICS}
    corpus_identical = {m: last["ours"]["corpus"][m] == last["ref"]["corpus"][m] for m in METRICS}
    med = {k: statistics.median(v) for k, v in times.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    result = {
        "benchmark": "tokenize + BLEU-1..4 + ROUGE-L + CIDEr-D, Flickr8k-Expert 16,992 rows",
        "capeval_tokenizer": "ptb (pure Python)",
        "reference": "pycocoevalcap 1.2 (PTBTokenizer jar + Bleu + Rouge + Cider)",
        "seconds": times,
        "median_seconds": med,
        "speedup": med["ref"] / med["ours"],
        "cpu_seconds": cpu,
        "median_cpu_seconds": med_cpu,
        "speedup_cpu": med_cpu["ref"] / med_cpu["ours"],
        "peak_rss_mb": {k: last[k]["peak_rss_mb"] for k in last},
        "per_caption_identical": identical,
        "corpus_identical": corpus_identical,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_avg": os.getloadavg()},
    }
    (HERE / "results" / "foundation.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: result[k] for k in ("median_seconds", "speedup", "median_cpu_seconds", "speedup_cpu",
                                              "peak_rss_mb", "per_caption_identical")}, indent=1))


if __name__ == "__main__":
    main()
