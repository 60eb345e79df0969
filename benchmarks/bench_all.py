"""Run every meta-evaluation benchmark, compare with the published numbers, time the bench,
and regenerate docs/REPRODUCTION.md from the measurements.

    python benchmarks/bench_all.py [--metrics bleu1,bleu4,...] [--bootstrap 1000] [--no-timing]
                                   [--no-reference] [--cache-dir DIR]

Writes benchmarks/results/bench_all.json and docs/REPRODUCTION.md. Published values come
from benchmarks/published_targets.json (with their sources and check status); nothing in
capeval reads that file. Timing runs `capeval bench all` for the n-gram metrics in a fresh
process with an empty cache (cold) and again (warm); the reference side computes the same
Flickr8k-Expert table with pycocoevalcap (Java PTB tokenizer, its Bleu/Rouge/Cider scorers)
and scipy, and must give identical τ values.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NGRAM = ["bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d"]

# (label, benchmark, loader options, headline statistic or None for the default)
RUNS = [
    ("flickr8k-expert", "flickr8k-expert", {}, None),
    ("flickr8k-cf", "flickr8k-cf", {}, None),
    ("composite", "composite", {}, None),
    ("pascal50s", "pascal50s", {}, None),
    ("abstract50s", "abstract50s", {}, None),
    ("flickr8k-expert@elliott-keller", "flickr8k-expert", {"protocol": "elliott-keller"}, "spearman"),
    ("tanti-human200", "tanti-human200", {}, None),
]
CORE = {"flickr8k-expert", "flickr8k-cf", "composite", "pascal50s", "abstract50s"}
# The evaluation sets of recent metric papers (`capeval bench modern`): never part of the team
# data, so they run only where their files are present; their section says so otherwise.
MODERN_RUNS = [
    ("thumb", "thumb", {}, None),
    ("thumb@system", "thumb", {"table": "system", "rows": "all"}, None),
    ("nebula", "nebula", {}, None),
    ("polaris", "polaris", {}, None),
]
SYSTEM_RUNS = ["tanti-flickr8k", "tanti-flickr30k", "tanti-coco"]
# METEOR per unit costs a JVM round trip; on 2 cores the CF table (47,830 rows) takes
# minutes, so these benchmarks get METEOR only with --meteor-everywhere.
METEOR_SKIP = {"flickr8k-cf", "tanti-human200"}


def _cmd(label: str, name: str, opts: dict, stat: str | None, metrics: list[str], bootstrap: int) -> str:
    parts = ["capeval bench", name, "--metrics", ",".join(metrics)]
    parts += [f"-D {k}={v}" for k, v in opts.items()]
    if stat:
        parts += ["--statistic", stat]
    if bootstrap:
        parts += ["--bootstrap", str(bootstrap)]
    return " ".join(parts) + f" --json {label}.json"


def run_all(args) -> dict:
    from capeval.service.cache import ScoreCache
    from capeval.metaeval.runner import run_benchmark
    from capeval.metaeval.tables import to_json_dict, to_markdown

    cache = ScoreCache(args.cache_dir)
    out = {}
    for label, name, opts, stat in RUNS:
        metrics = [m for m in args.metrics if not (m == "meteor" and name in METEOR_SKIP and not args.meteor_everywhere)]
        t0 = time.perf_counter()
        print(f"[bench_all] {label}: {','.join(metrics)}", file=sys.stderr, flush=True)
        bs = args.bootstrap if label in CORE else 0
        res = run_benchmark(name, metrics, cache=cache, statistic=stat, load_options=opts, bootstrap=bs,
                            seed=args.seed, root=args.root)
        out[label] = {"json": to_json_dict(res), "markdown": to_markdown([res], heading_level=4),
                      "command": _cmd(label, name, opts, stat, metrics, bs),
                      "seconds": round(time.perf_counter() - t0, 2)}
    if args.system:
        for name in SYSTEM_RUNS:
            metrics = [m for m in args.metrics if m != "meteor"]
            print(f"[bench_all] {name}: {','.join(metrics)}", file=sys.stderr, flush=True)
            res = run_benchmark(name, metrics, cache=cache, root=args.root)
            out[name] = {"json": to_json_dict(res), "markdown": to_markdown([res], heading_level=4),
                         "command": _cmd(name, name, {}, None, metrics, 0), "seconds": round(res.seconds, 2)}
    return out


def run_modern(args) -> dict:
    """label -> entry as in :func:`run_all`, or None when the benchmark's files are absent."""
    from capeval.errors import ResourceNotFound
    from capeval.service.cache import ScoreCache
    from capeval.metaeval.runner import run_benchmark
    from capeval.metaeval.tables import to_json_dict, to_markdown

    cache = ScoreCache(args.cache_dir)
    out = {}
    for label, name, opts, stat in MODERN_RUNS:
        print(f"[bench_all] {label}: {','.join(args.metrics)}", file=sys.stderr, flush=True)
        try:
            res = run_benchmark(name, args.metrics, cache=cache, statistic=stat, load_options=opts,
                                bootstrap=args.bootstrap, seed=args.seed, root=args.root)
        except ResourceNotFound as exc:
            print(f"[bench_all] {label}: not run ({exc})", file=sys.stderr, flush=True)
            out[label] = None
            continue
        out[label] = {"json": to_json_dict(res), "markdown": to_markdown([res], heading_level=4),
                      "command": _cmd(label, name, opts, stat, args.metrics, args.bootstrap),
                      "seconds": round(res.seconds, 2)}
    return out


def modern_section(modern: dict, targets: dict) -> str:
    """THumB, Nebula and Polaris: the published values with their sources, capeval's beside them
    when the files were present."""
    L = ["## THumB, Nebula and Polaris\n",
         "The evaluation sets recent metric papers report (Polos, DENEB, EXPERT, Pearl). capeval does not ship "
         "their files, never trains or chooses a learned metric's defaults on them (`capeval train learned` refuses "
         "them without `--allow-eval-sets`), and refuses a run on files that differ from their pinned SHA-256. "
         "Get them with `capeval data download thumb|nebula|polaris --to DIR` (public origins; the Polaris CSVs "
         "have no pinned checksum yet and are placed by hand, their digest then appears in the signature), then "
         "`capeval bench modern -m bleu4,meteor,rouge_l,cider_d` or rerun this script. The image metrics (CLIP-S, "
         "RefCLIP-S, PAC-S, RefPAC-S) need CLIP/PAC-S weights and the benchmark images, which the machine these "
         "tables were made on does not have, so they show no value of ours (docs/IMAGE_METRICS.md gives the "
         "commands); Polos runs from a checkpoint the user brings (`-m polos`, docs/POLOS.md), which this machine does not have either.\n"]
    for label in ("thumb", "thumb@system", "nebula", "polaris"):
        entry = modern.get(label)
        t = targets.get(label.split("@")[0], {})
        L.append(f"### {label}\n")
        if label == "thumb@system":
            L.append("System level: one corpus score per system (the four models and Human), correlated with the "
                     "systems' mean THumB score.\n")
        elif t.get("source"):
            L.append(f"Published: {t['source']}.\n")
        if entry is None:
            L.append("Not run: the files were not present when this file was generated (`capeval data list` "
                     "shows them as missing).\n")
        else:
            L.append(f"Command: `{entry['command']}`\n")
        if label == "thumb@system":
            if entry is not None:
                L.append(entry["markdown"])
            continue
        j = (entry or {}).get("json", {})
        sources = t.get("value_sources", {})
        rows = []
        for stat, by_metric in t.get("statistics", {}).items():
            for metric, (value, status) in by_metric.items():
                ours = j.get(metric, {}).get(stat)
                mine = None if ours is None else 100 * ours
                delta = None if mine is None else mine - value
                rows.append(f"| {metric} | {_STAT_LABEL[stat]} | {_fmt(mine, 1)} | {value} | {_delta(delta, 1)} | "
                            f"{status} | {sources.get(stat, {}).get(metric, '')} |")
        if rows:
            L.append("| metric | statistic | ours | published | Δ | status | source |")
            L.append("|---|---|---:|---:|---:|---|---|")
            L.extend(rows)
            L.append("")
        if t.get("not_found"):
            L.append(f"Not found: {t['not_found']}.\n")
        if entry is not None:
            L.append("All statistics as measured:\n")
            L.append(entry["markdown"])
    return "\n".join(L)


def combination(args) -> dict:
    """Normalised 2–3 metric sums on Flickr8k-Expert (scores come from the cache)."""
    from capeval.service.cache import ScoreCache
    from capeval.metaeval.combination import run_combination
    from capeval.metaeval.tables import combination_markdown, combination_to_json

    metrics = [m for m in args.metrics if m not in {"bleu2", "bleu3"}]  # near-duplicates of bleu1/bleu4
    run = run_combination("flickr8k-expert", metrics, sizes=(2, 3), method="z", cache=ScoreCache(args.cache_dir),
                          root=args.root)
    return {"json": combination_to_json(run), "markdown": combination_markdown(run, top=10),
            "command": f"capeval combine flickr8k-expert --metrics {','.join(metrics)} --sizes 2,3 --norm z"}


def time_cli(metrics: list[str]) -> dict:
    """Wall time of `capeval bench all` in a fresh process: empty cache, then warm."""
    exe = shutil.which("capeval") or f"{sys.executable} -m capeval.cli.main"
    tmp = Path(tempfile.mkdtemp(prefix="capeval-bench-cache-"))
    try:
        times = {}
        for phase in ("cold", "warm"):
            cmd = f"{exe} bench all --metrics {','.join(metrics)} --cache-dir {tmp} -q"
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[phase] = round(time.perf_counter() - t0, 2)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            # CPU seconds do not depend on how busy the shared machine is; wall time does.
            times[f"{phase}_cpu"] = round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2)
        times["load_average_after"] = round(os.getloadavg()[0], 1)
        times["command"] = f"capeval bench all --metrics {','.join(metrics)} --cache-dir <empty dir> -q"
        return times
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def reference_expert(ours: dict) -> dict:
    """pycocoevalcap + scipy on Flickr8k-Expert, timed, and τ compared with ours."""
    import numpy as np
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
    from scipy.stats import kendalltau

    import capeval.data

    t = capeval.data.load("flickr8k-expert")
    t0 = time.perf_counter()
    tok = PTBTokenizer()
    gts = tok.tokenize({i: [{"caption": r} for r in rs] for i, rs in enumerate(t.references)})
    res = tok.tokenize({i: [{"caption": c}] for i, c in enumerate(t.candidates)})
    per = {}
    _, b = Bleu(4).compute_score(gts, res, verbose=0)
    per["bleu1"], per["bleu4"] = b[0], b[3]
    per["rouge_l"] = Rouge().compute_score(gts, res)[1]
    per["cider_d"] = Cider().compute_score(gts, res)[1]
    taus = {m: float(kendalltau(np.asarray(v, float), t.human, variant="c").statistic) for m, v in per.items()}
    secs = time.perf_counter() - t0
    diffs = {m: abs(taus[m] - ours[m]["kendall_tau_c"]) for m in taus if m in ours}
    return {"seconds": round(secs, 2), "tau_c": taus, "max_abs_diff_vs_capeval": max(diffs.values()) if diffs else None,
            "identical": all(d == 0 for d in diffs.values()), "metrics": sorted(per),
            "what": "Java PTBTokenizer + pycocoevalcap Bleu(4)/Rouge/Cider + scipy kendalltau(variant='c'), in-process"}


def machine() -> dict:
    import numpy
    import scipy

    import capeval

    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "numpy": numpy.__version__, "scipy": scipy.__version__, "capeval": capeval.__version__}


# ---- REPRODUCTION.md -------------------------------------------------------------------

_STAT_LABEL = {"kendall_tau_c": "τc", "kendall_tau_b": "τb", "pearson": "Pearson r", "spearman": "Spearman ρ"}


def _fmt(x, d=3):
    return "—" if x is None else f"{x:.{d}f}"


def _delta(x, d):
    """Signed difference; an exact match prints as 0 without a spurious sign."""
    if x is None:
        return "not run"
    text = f"{x:+.{d}f}"
    return f"{0:.{d}f}" if float(text) == 0 else text


def comparison_rows(label: str, entry: dict, targets: dict) -> list[str]:
    """Markdown rows: metric | statistic | ours | published | Δ | status."""
    j = entry["json"]
    rows = []
    t = targets.get(label, {})
    scale = t.get("scale", 100)
    for stat, by_metric in t.get("statistics", {}).items():
        for metric, (value, status) in by_metric.items():
            ours = j.get(metric, {}).get(stat)
            mine = None if ours is None else round(scale * ours, 6)
            delta = None if mine is None else mine - value
            rows.append(f"| {metric} | {_STAT_LABEL[stat]} | {_fmt(mine, 3)} | {value} | "
                        f"{_delta(delta, 3)} | {status} |")
    for metric, pub in t.get("accuracy", {}).items():
        ours = j.get(metric)
        for cat in ("HC", "HI", "HM", "MM", "mean"):
            mine = None if ours is None else ours.get(cat)
            delta = None if mine is None else mine - pub[cat]
            rows.append(f"| {metric} | {cat} | {_fmt(mine, 2)} | {pub[cat]} | "
                        f"{_delta(delta, 2)} | {pub['status']} |")
    return rows


def render(results: dict, targets: dict, timing: dict | None, reference: dict | None, combo: dict | None, meta: dict,
           args, modern: dict | None = None) -> str:
    L = []
    L.append("# Reproduction: capeval's meta-evaluation numbers next to the published ones\n")
    L.append(f"Generated by `python benchmarks/bench_all.py` on {meta['date']} (capeval {meta['machine']['capeval']}, "
             f"Python {meta['machine']['python']}, SciPy {meta['machine']['scipy']}, {meta['machine']['cpus']} CPUs). "
             "Do not edit by hand: rerun the script. Raw output: `benchmarks/results/bench_all.json`; published "
             "values and their sources: `benchmarks/published_targets.json`.\n")
    L.append("Conventions: correlations are shown as 100 × coefficient except Spearman ρ for Elliott & Keller "
             "(raw, as published); accuracies in percent. Δ = ours − published. Status: *checked* = the published "
             "value was verified against its source text (marked ✔/✔c in docs/PUBLISHED.md); *recalled* = team transcription "
             "not yet verified against the PDF. Every table below lists the benchmark signature (dataset protocol + "
             "statistic) and each metric's signature. The `capeval bench` JSON (`--json`) holds raw coefficients "
             f"in [−1, 1]. Bootstrap (core five benchmarks): {args.bootstrap} row resamples (pairs resampled within "
             f"their category), seed {args.seed}, 95% percentile interval.\n")
    L.append("## Summary against published numbers\n")
    L.append("| benchmark | metric | statistic | ours | published | Δ | status |")
    L.append("|---|---|---|---:|---:|---:|---|")
    for label, entry in results.items():
        for row in comparison_rows(label, entry, targets):
            L.append(f"| {label} " + row)
    L.append("")
    for label, entry in results.items():
        t = targets.get(label, {})
        L.append(f"## {label}\n")
        if t.get("source"):
            L.append(f"Published: {t['source']}.\n")
        L.append(f"Command: `{entry['command']}`\n")
        rows = comparison_rows(label, entry, targets)
        if rows:
            L.append("| metric | statistic | ours | published | Δ | status |")
            L.append("|---|---|---:|---:|---:|---|")
            L.extend(rows)
            L.append("")
        L.append("All statistics as measured:\n")
        L.append(entry["markdown"])
    L.append(modern_section(modern or {}, targets))
    L.append("## Not compared, and why\n")
    L.append("- **The seed papers** (Kilickaya et al. 2017, NNEval, QACE, WEmbSim): every table whose data is here "
             "is compared cell by cell in *Side by side with the seed papers* below (`benchmarks/seed_tables.py`).")
    L.append("- **PASCAL-50S**: `consensus_pascal.mat` (the 48-vote labels the papers use) is not available; we use the "
             "EXPERT-processed labels and their 5 references (docs/DATA_FORMATS.md, PASCAL-50S). The BLEU-4 gap on HI/MM is the "
             "known, unexplained one described there; do not treat PASCAL BLEU-4 as a regression target.")
    L.append("- **COMPOSITE**: the reference protocol is inferred (`refs=image-minus-human`, docs/DATA_FORMATS.md, COMPOSITE) and the "
             "text is reconstructed from UMIC's lower-cased copy; a ≤ 0.2 gap is expected.")
    L.append("- **ABSTRACT-50S, Tanti human evaluation, Tanti system-level runs**: no published targets are recorded; "
             "numbers are reported for reference only. ABSTRACT-50S categories come from scene membership "
             "(`capeval.data.abstract50s_categories`): 138 HC, 138 HI, 124 pairs undetermined by the data; the "
             "vote polarity (+1 = B) is confirmed by the HI pairs, where the target scene's own caption wins.")
    L.append("- **Elliott & Keller BLEU-4**: our Spearman ρ is about 0.02 below their README's 0.459 while CIDEr and "
             "METEOR agree to 0.001. The cause is not established (their BLEU-4 scorer or smoothing may differ from the "
             "coco per-unit BLEU-4 used here); not investigated further.")
    L.append("- **FOIL**: only format samples are available; not a benchmark.")
    skipped = sorted(METEOR_SKIP) if "meteor" in args.metrics and not args.meteor_everywhere else []
    if skipped:
        L.append(f"- **METEOR on {', '.join(skipped)}**: not run by default (one JVM call per unit; minutes on 2 cores). "
                 "Run `python benchmarks/bench_all.py --meteor-everywhere` to include it.")
    if "meteor" not in args.metrics:
        L.append("- **METEOR**: not run (Java not found or excluded with --metrics).")
    L.append("- **SPICE, BERTScore, CLIP-S and other model metrics**: not part of this run; add them with `--metrics` "
             "when registered. SPICE (`spice_py_spacy`) has its own section below and docs/SPICE.md.\n")
    spice_md = _spice_revisions()
    if spice_md:
        L.append("## SPICE (`spice_py_spacy`) by revision\n")
        L.append("Ties, zeros and headline numbers of the Python SPICE approximation before and after each revision "
                 "of its rules (docs/SPICE.md explains the ties and the τb/τc gap). "
                 "Command: `python benchmarks/spice_revision.py --label <rev>` (older revisions from a checkout of "
                 "their commit, see the script).\n")
        L.append(spice_md)
    seed_md = _seed_tables()
    if seed_md:
        # seed_tables.py rewrites only the text between these markers
        L.append("<!-- seed-tables:begin -->\n" + seed_md + "\n<!-- seed-tables:end -->\n")
    if combo:
        L.append("## Metric combinations (Flickr8k-Expert)\n")
        L.append("z-normalised sums of 2–3 metrics, ranked by τc; each row is Williams-tested against the best single "
                 "metric on Pearson r (the test is defined for Pearson only, docs/STATISTICS.md). Top 10 shown; the full "
                 "list is in the results JSON.\n")
        L.append(f"Command: `{combo['command']}`\n")
        L.append(combo["markdown"])
    if timing or reference:
        L.append("## Timing\n")
        if timing:
            L.append(f"`{timing['command']}` (fresh process, all five core benchmarks): **cold {timing['cold']} s** "
                     f"wall ({timing['cold_cpu']} s CPU), **warm {timing['warm']} s** wall ({timing['warm_cpu']} s CPU). "
                     f"The machine is shared (load average {timing['load_average_after']} on {meta['machine']['cpus']} "
                     "CPUs when the timing finished), so wall time overstates what an idle machine needs; CPU time "
                     "is the load-independent figure.\n")
        if reference:
            L.append(f"Reference side (Flickr8k-Expert only, {', '.join(reference['metrics'])}): {reference['what']}: "
                     f"{reference['seconds']} s; τc identical to capeval's: **{reference['identical']}** (max |Δτ| = "
                     f"{reference['max_abs_diff_vs_capeval']}).\n")
        L.append(f"Machine: {meta['machine']['platform']}, {meta['machine']['cpus']} CPUs (shared with other jobs; "
                 "treat timings as indicative).\n")
    return "\n".join(L)


def _spice_revisions() -> str:
    """The stored spice_py_spacy revision comparison (benchmarks/spice_revision.py), if any."""
    path = HERE / "results" / "spice_revisions.json"
    if not path.exists():
        return ""
    sys.path.insert(0, str(HERE))
    from spice_revision import markdown

    return markdown(path)


def _seed_tables() -> str:
    """The stored seed-paper comparison (benchmarks/seed_tables.py), if any."""
    path = HERE / "results" / "seed_tables.json"
    if not path.exists():
        return ""
    sys.path.insert(0, str(HERE))
    from seed_tables import markdown

    return markdown(path)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--metrics", default=None, help="comma-separated; default n-gram metrics + meteor if Java")
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--root", default=None)
    ap.add_argument("--results", default=str(HERE / "results" / "bench_all.json"))
    ap.add_argument("--doc", default=str(REPO / "docs" / "REPRODUCTION.md"))
    ap.add_argument("--no-timing", dest="timing", action="store_false")
    ap.add_argument("--no-reference", dest="reference", action="store_false")
    ap.add_argument("--no-system", dest="system", action="store_false")
    ap.add_argument("--no-combination", dest="combination", action="store_false")
    ap.add_argument("--meteor-everywhere", action="store_true")
    args = ap.parse_args(argv)
    if args.metrics:
        args.metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    else:
        args.metrics = NGRAM + (["meteor"] if shutil.which("java") else [])

    results = run_all(args)
    modern = run_modern(args)
    combo = combination(args) if args.combination else None
    timing = time_cli(NGRAM) if args.timing else None
    reference = reference_expert(results["flickr8k-expert"]["json"]) if args.reference else None
    targets = json.loads((HERE / "published_targets.json").read_text())
    meta = {"date": dt.date.today().isoformat(), "machine": machine(),
            "command": "python benchmarks/bench_all.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "metrics": args.metrics, "bootstrap": args.bootstrap, "seed": args.seed}
    out = {"_meta": meta, "timing": timing, "reference": reference,
           "modern": {k: None if v is None else {"json": v["json"], "command": v["command"], "seconds": v["seconds"]}
                      for k, v in modern.items()},
           "combination": None if combo is None else combo["json"],
           "benchmarks": {k: {"json": v["json"], "command": v["command"], "seconds": v["seconds"]}
                          for k, v in results.items()}}
    Path(args.results).parent.mkdir(parents=True, exist_ok=True)
    Path(args.results).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    Path(args.doc).parent.mkdir(parents=True, exist_ok=True)
    Path(args.doc).write_text(render(results, targets, timing, reference, combo, meta, args, modern))
    print(f"wrote {args.results} and {args.doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
