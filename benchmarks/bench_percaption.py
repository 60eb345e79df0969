"""Per-caption speed: tokenize + BLEU-1..4 + ROUGE-L + CIDEr-D, capeval vs pycocoevalcap 1.2,
side by side, on workloads where deduplication does not help (issue 15).

Workloads
  coco     one system on the COCO Karpathy test split (Tanti et al.'s merge_1: 5,000 distinct
           images x 5 references); every side in a fresh process: the first call (imports
           excluded on both sides, import time reported apart) and warm calls in that process;
  cli      the same rows end to end: ``capeval score`` CLI process vs a python process running
           pycocoevalcap (imports, reading the rows and the JVM included on both sides);
  synth    100,000 rows of unique synthetic captions with unique references
           (benchmarks/stream_synth.py, seed 13), first call in a fresh process;
  expert   Flickr8k-Expert (16,992 rows, 5,664 distinct units: the dedup-heavy case);
  reward   capeval.CiderDReward, batches of 500 candidates x 5 references against a CIDEr-D df
           precomputed from the 5,000 COCO reference sets; scores checked == pycocoevalcap's
           CIDEr-D of the same rows (whose df is that of the same 5,000 sets).

capeval runs twice per workload: with its compiled core (capeval._speedups, the default when it
was built at install) and with CAPEVAL_PURE_PYTHON=1 (the numpy/Python fallback), so both paths'
speeds are on record; both are checked == pycocoevalcap.

Every side reports wall and CPU seconds (children included: the reference tokenizes in a JVM)
and peak RSS; outputs are compared per caption and corpus with ``==``. The machine is shared:
``--wait-quiet`` polls ``uptime`` every minute for up to 15 minutes until the 1-min load is
below 1.3; the load before and after every run is recorded. Writes
benchmarks/results/percaption.json.

    python benchmarks/bench_percaption.py [--workloads coco,cli,synth,expert,reward] [--repeat 3]
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
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
METRICS = ["bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d"]
COCO_SYSTEM = "merge_1"
SYNTH_ROWS = 100_000
QUIET_LOAD = 1.3


def _cpu() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def _rows(workload: str, synth_path: str | None):
    if workload == "coco":
        import capeval.data

        t = capeval.data.load("tanti-coco")
        return list(t.systems[COCO_SYSTEM]), [list(r) for r in t.references]
    if workload == "expert":
        sys.path.insert(0, str(HERE))
        from _common import expert_rows

        c, r = expert_rows()
        return list(c), [list(x) for x in r]
    rows = [json.loads(line) for line in Path(synth_path).read_text(encoding="utf-8").splitlines()]
    return [r["candidate"] for r in rows], [r["references"] for r in rows]


# -- one side in its own process ---------------------------------------------------------------
def _import_side(side: str):
    t = time.perf_counter()
    if side in ("ours", "ours_pure"):
        import capeval

        def run(cands, refs):
            r = capeval.score(cands, refs, METRICS, tokenizer="ptb")
            return {m: r.per_caption[m].tolist() for m in METRICS}, dict(r.corpus)
    else:
        from pycocoevalcap.bleu.bleu import Bleu
        from pycocoevalcap.cider.cider import Cider
        from pycocoevalcap.rouge.rouge import Rouge
        from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

        def run(cands, refs):
            gts = {i: [{"caption": r} for r in rs] for i, rs in enumerate(refs)}
            res = {i: [{"caption": c}] for i, c in enumerate(cands)}
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                tok = PTBTokenizer()
                g, r = tok.tokenize(gts), tok.tokenize(res)
                b, bs = Bleu(4).compute_score(g, r, verbose=0)
                rl, rls = Rouge().compute_score(g, r)
                c, cs = Cider().compute_score(g, r)
            per = {f"bleu{k + 1}": list(map(float, bs[k])) for k in range(4)}
            per.update(rouge_l=list(map(float, rls)), cider_d=list(map(float, cs)))
            corpus = {f"bleu{k + 1}": b[k] for k in range(4)}
            corpus.update(rouge_l=float(rl), cider_d=float(c))
            return per, corpus
    return run, time.perf_counter() - t


def child(side: str, workload: str, warm: int, synth_path: str | None, out: str) -> None:
    run, import_s = _import_side(side)  # first: capeval's import is timed before the loaders import it
    cands, refs = _rows(workload, synth_path)
    calls = []
    result = None
    for _ in range(1 + warm):
        c0, t0 = _cpu(), time.perf_counter()
        result = run(cands, refs)
        calls.append({"wall": time.perf_counter() - t0, "cpu": _cpu() - c0})
    per, corpus = result
    compiled = None
    if side != "ref":
        from capeval import _compiled

        compiled = _compiled.core is not None
    Path(out).write_text(json.dumps({
        "compiled_core": compiled, "import_seconds": import_s, "calls": calls, "per": per, "corpus": corpus,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_rss_children_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }))


def _spawn(side, workload, warm, synth_path):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    load0 = os.getloadavg()
    cmd = [sys.executable, __file__, "--child", side, "--workload", workload, "--warm", str(warm), "--out", out]
    if synth_path:
        cmd += ["--synth", synth_path]
    env = dict(os.environ)
    env.pop("CAPEVAL_PURE_PYTHON", None)
    if side == "ours_pure":
        env["CAPEVAL_PURE_PYTHON"] = "1"
    subprocess.run(cmd, check=True, env=env)
    data = json.loads(Path(out).read_text())
    os.unlink(out)
    data["load_before_after"] = [load0, os.getloadavg()]
    return data


def _compare(a, b):
    return ({m: a["per"][m] == b["per"][m] for m in METRICS}, {m: a["corpus"][m] == b["corpus"][m] for m in METRICS})


def side_by_side(workload: str, repeat: int, warm: int, synth_path=None) -> dict:
    runs = {"ref": [], "ours": [], "ours_pure": []}
    for _ in range(repeat):
        for side in runs:
            runs[side].append(_spawn(side, workload, warm, synth_path))
    per_ok, corpus_ok = _compare(runs["ours"][-1], runs["ref"][-1])
    pure_per_ok, pure_corpus_ok = _compare(runs["ours_pure"][-1], runs["ref"][-1])
    out = {"rows": len(runs["ours"][-1]["per"]["bleu1"]), "per_caption_identical": per_ok, "corpus_identical": corpus_ok,
           "pure_per_caption_identical": pure_per_ok, "pure_corpus_identical": pure_corpus_ok,
           "compiled_core_used": {"ours": runs["ours"][-1]["compiled_core"],
                                  "ours_pure": runs["ours_pure"][-1]["compiled_core"]}}
    for side, rs in runs.items():
        first = [r["calls"][0] for r in rs]
        warm_calls = [c for r in rs for c in r["calls"][1:]]
        out[side] = {
            "first_call_wall": [c["wall"] for c in first], "first_call_cpu": [c["cpu"] for c in first],
            "median_first_call_wall": statistics.median(c["wall"] for c in first),
            "median_first_call_cpu": statistics.median(c["cpu"] for c in first),
            "median_warm_wall": statistics.median(c["wall"] for c in warm_calls) if warm_calls else None,
            "median_warm_cpu": statistics.median(c["cpu"] for c in warm_calls) if warm_calls else None,
            "import_seconds": statistics.median(r["import_seconds"] for r in rs),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in rs),
            "peak_rss_children_mb": max(r["peak_rss_children_mb"] for r in rs),
            "load_before_after": [r["load_before_after"] for r in rs],
        }
    r = out["ref"]
    for side, prefix in (("ours", "ratio"), ("ours_pure", "pure_ratio")):
        o = out[side]
        out[f"{prefix}_first_call_wall"] = r["median_first_call_wall"] / o["median_first_call_wall"]
        out[f"{prefix}_first_call_cpu"] = r["median_first_call_cpu"] / o["median_first_call_cpu"]
        if o["median_warm_wall"]:
            out[f"{prefix}_warm_wall"] = r["median_warm_wall"] / o["median_warm_wall"]
            out[f"{prefix}_warm_cpu"] = r["median_warm_cpu"] / o["median_warm_cpu"]
    return out


# -- CLI end to end ------------------------------------------------------------------------------
_REF_SCRIPT = r"""
import json, sys
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.rouge.rouge import Rouge
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
gts = {i: [{"caption": x} for x in r["references"]] for i, r in enumerate(rows)}
res = {i: [{"caption": r["candidate"]}] for i, r in enumerate(rows)}
tok = PTBTokenizer()
g, r = tok.tokenize(gts), tok.tokenize(res)
b, bs = Bleu(4).compute_score(g, r, verbose=0)
rl, rls = Rouge().compute_score(g, r)
c, cs = Cider().compute_score(g, r)
per = {f"bleu{k + 1}": list(map(float, bs[k])) for k in range(4)}
per.update(rouge_l=list(map(float, rls)), cider_d=list(map(float, cs)))
json.dump(per, open(sys.argv[2], "w"))
"""


def _timed_process(cmd, env=None) -> dict:
    load0 = os.getloadavg()
    if env is None:
        env = {k: v for k, v in os.environ.items() if k != "CAPEVAL_PURE_PYTHON"}
    t0, c0 = time.perf_counter(), _cpu()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return {"wall": time.perf_counter() - t0, "cpu": _cpu() - c0, "load_before_after": [load0, os.getloadavg()],
            "peak_rss_children_mb_so_far": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}


def cli_end_to_end(repeat: int) -> dict:
    cands, refs = _rows("coco", None)
    tmp = Path(tempfile.mkdtemp(prefix="bench-percaption-"))
    rows = tmp / "rows.jsonl"
    rows.write_text("".join(json.dumps({"id": i, "candidate": c, "references": r}) + "\n"
                            for i, (c, r) in enumerate(zip(cands, refs))), encoding="utf-8")
    capeval_bin = str(Path(sys.executable).with_name("capeval"))
    ours, ours_pure, ref = [], [], []
    pure_env = {**os.environ, "CAPEVAL_PURE_PYTHON": "1"}
    for i in range(repeat):
        ref.append(_timed_process([sys.executable, "-c", _REF_SCRIPT, str(rows), str(tmp / "ref.json")]))
        ours.append(_timed_process([capeval_bin, "score", "-i", str(rows), "-m", ",".join(METRICS),
                                    "-o", str(tmp / f"ours{i}.json"), "-q"]))
        ours_pure.append(_timed_process([capeval_bin, "score", "-i", str(rows), "-m", ",".join(METRICS),
                                         "-o", str(tmp / f"pure{i}.json"), "-q"], env=pure_env))
    got = json.loads((tmp / f"ours{repeat - 1}.json").read_text())["per_caption"]
    got_pure = json.loads((tmp / f"pure{repeat - 1}.json").read_text())["per_caption"]
    want = json.loads((tmp / "ref.json").read_text())
    med = {k: statistics.median(x["wall"] for x in v) for k, v in (("ours", ours), ("ours_pure", ours_pure), ("ref", ref))}
    return {"rows": len(cands), "ours": ours, "ours_pure": ours_pure, "ref": ref, "median_wall": med,
            "ratio_wall": med["ref"] / med["ours"], "pure_ratio_wall": med["ref"] / med["ours_pure"],
            "per_caption_identical": {m: got[m] == want[m] for m in METRICS},
            "pure_per_caption_identical": {m: got_pure[m] == want[m] for m in METRICS},
            "note": "whole processes: interpreter start, imports, reading the rows, scoring, writing (and the JVM)"}


# -- reward latency ------------------------------------------------------------------------------
def reward_latency(batch: int = 500, batches: int = 60, pure: bool = False) -> dict:
    """Latency of CiderDReward batches; ``pure``: with the compiled core switched off in this
    process (the numpy/Python path)."""
    from capeval import _compiled
    from capeval.metrics import _ngrams

    saved = _compiled.core
    if pure:
        _compiled.core = None
    _ngrams.clear_cache()  # no index built by the other path is reused
    try:
        return _reward_latency(batch, batches)
    finally:
        _compiled.core = saved
        _ngrams.clear_cache()


def _reward_latency(batch: int, batches: int) -> dict:
    import numpy as np

    import capeval
    import capeval.data
    from capeval.metrics.cider import DocumentFrequency
    from capeval.text import tokenize_corpus

    t = capeval.data.load("tanti-coco")
    systems = sorted(t.systems)
    refs = [list(r) for r in t.references]
    cands = [c for s in systems for c in t.systems[s]]
    tc, tr = tokenize_corpus(cands, refs * len(systems))
    t0 = time.perf_counter()
    df = DocumentFrequency.from_references(tr[: len(refs)], [1] * len(refs))
    reward = capeval.CiderDReward(df)
    setup = time.perf_counter() - t0
    lat, cpu = [], []
    for b in range(batches):
        lo = (b * batch) % len(tc)
        c0, t1 = _cpu(), time.perf_counter()
        reward(tc[lo:lo + batch], tr[lo:lo + batch])
        lat.append(time.perf_counter() - t1)
        cpu.append(_cpu() - c0)
    # Exactness: the COCO system's rows scored in batches == pycocoevalcap's CIDEr-D of them
    # (its df is the df of the same 5,000 reference sets).
    from pycocoevalcap.cider.cider import Cider

    i0 = systems.index(COCO_SYSTEM) * len(refs)
    mine = np.concatenate([reward(tc[i0 + lo:i0 + lo + batch], tr[i0 + lo:i0 + lo + batch])
                           for lo in range(0, len(refs), batch)])
    _, want = Cider().compute_score({i: tr[i0 + i] for i in range(len(refs))}, {i: [tc[i0 + i]] for i in range(len(refs))})
    from capeval import _compiled

    return {"batch": f"{batch} candidates x 5 references, tokenizer none (pre-tokenized)", "batches": batches,
            "compiled_core": _compiled.core is not None,
            "df": f"{len(df.df)} n-grams from {len(refs)} COCO Karpathy-test reference sets",
            "setup_seconds": setup, "median_ms": 1e3 * statistics.median(lat), "p90_ms": 1e3 * float(np.percentile(lat, 90)),
            "min_ms": 1e3 * min(lat), "median_cpu_ms": 1e3 * statistics.median(cpu),
            "equals_pycocoevalcap": mine.tolist() == [float(x) for x in want], "load_after": os.getloadavg()}


def wait_quiet(max_minutes: int = 15) -> dict:
    polls = []
    for _ in range(max_minutes + 1):
        load = os.getloadavg()[0]
        polls.append(load)
        if load < QUIET_LOAD:
            return {"quiet": True, "polls_1min_load": polls}
        print(f"load {load:.2f} >= {QUIET_LOAD}: waiting a minute", file=sys.stderr, flush=True)
        time.sleep(60)
    return {"quiet": False, "polls_1min_load": polls}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", default="coco,cli,synth,expert,reward")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--wait-quiet", action="store_true")
    ap.add_argument("--max-wait-minutes", type=int, default=15)
    ap.add_argument("--out", default=str(HERE / "results" / "percaption.json"))
    ap.add_argument("--child", choices=["ours", "ours_pure", "ref"])
    ap.add_argument("--workload")
    ap.add_argument("--warm", type=int, default=0)
    ap.add_argument("--synth")
    a = ap.parse_args()
    if a.child:
        child(a.child, a.workload, a.warm, a.synth, a.out)
        return
    import capeval
    import numpy
    from capeval import _compiled

    result = {"benchmark": "tokenize + BLEU-1..4 + ROUGE-L + CIDEr-D per caption, capeval vs pycocoevalcap 1.2",
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "numpy": numpy.__version__,
                          "capeval": capeval.__version__, "compiled_core_built": _compiled.core is not None}}
    if a.wait_quiet:
        result["wait_quiet"] = wait_quiet(a.max_wait_minutes)
    result["load_at_start"] = os.getloadavg()
    todo = a.workloads.split(",")

    def save():  # after every workload: a later failure keeps what was measured
        Path(a.out).write_text(json.dumps(result, indent=1))

    if "coco" in todo:
        result["coco"] = side_by_side("coco", a.repeat, warm=2)
        save()
    if "cli" in todo:
        result["cli"] = cli_end_to_end(a.repeat)
        save()
    if "expert" in todo:
        result["expert"] = side_by_side("expert", 1, warm=1)
        save()
    if "reward" in todo:
        result["reward"] = reward_latency()
        result["reward_pure"] = reward_latency(pure=True)
        save()
    if "synth" in todo:
        sys.path.insert(0, str(HERE))
        from stream_synth import write_jsonl

        tmp = Path(tempfile.mkdtemp(prefix="bench-percaption-"))
        write_jsonl(tmp / "synth.jsonl", SYNTH_ROWS, 13)
        result["synth"] = side_by_side("synth", 1, warm=0, synth_path=str(tmp / "synth.jsonl"))
        result["synth"]["source"] = f"benchmarks/stream_synth.py --rows {SYNTH_ROWS} --seed 13"
    result["load_at_end"] = os.getloadavg()
    save()
    brief = {k: {kk: v[kk] for kk in v if kk.startswith(("ratio", "pure_ratio")) or kk.endswith("identical") or kk in ("median_ms", "equals_pycocoevalcap")}
             for k, v in result.items() if isinstance(v, dict) and k not in ("machine", "wait_quiet")}
    print(json.dumps(brief, indent=1))


if __name__ == "__main__":
    main()
