"""Cost of every metric family on long captions, and pycocoevalcap's on the same rows (issue 43).

Rows are paragraphs built from the COCO Karpathy test captions as ``capeval stress coco-paragraph``
builds them (docs/STRESS.md): the images in file order, sentence i of a candidate one seeded
caption of image i (``capeval.stress.items.benchmark_items('coco', seed=12345)``, each caption made
one sentence by ``as_sentence``), its three references the same images' other captions in the same
order. A row at L words takes the run of consecutive images whose candidate sentences come closest
to L words (one image at 10 words, about 48 at 500); rows never share an image.

Every cell (family x length x side) runs in a fresh Python process: it scores two warm-up rows of
10 words built from the split's last images (imports, model and JVM start, resource loads: fixed
costs, not per-word ones), then times one call on the cell's rows. A family's cells hold the
same number of candidate words at every length (its budget), so a flat per-word cost is an equal
time across lengths. Peak memory is the peak RSS of that call over the RSS before it, the peak
reset first (``/proc/self/clear_refs``): it counts what torch and spaCy allocate outside Python's
allocator, which tracemalloc does not see (and tracemalloc slows allocation-heavy Python code, so
it would distort the times taken in the same call); the fresh process keeps memory freed by an
earlier cell from being reused. pycocoevalcap's JVMs: their own peak RSS, beside the Python one.
Cells run with ``$CAPEVAL_CACHE`` set to a run-private directory (resources pinned where they
resolve now), whose SPICE-py parse store is removed before each cell: SPICE-py is measured cold.

    python benchmarks/long_captions.py [--quick] [--lengths 10,50,100,300,500] [--families bleu,...]
                                       [--out benchmarks/results/long_captions.json] [--doc docs/PERFORMANCE.md]
    python benchmarks/long_captions.py --render benchmarks/results/long_captions.json --doc docs/PERFORMANCE.md
"""
from __future__ import annotations

import argparse
import datetime as dt
import functools
import gc
import hashlib
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

from long_captions_table import render, write_doc  # noqa: E402  (scripts run from benchmarks/)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SEED = 12345  # capeval stress's default seed: the rows are coco-paragraph's sentences
LENGTHS = (10, 50, 100, 300, 500)
N_REFS = 3
WARMUP_ROWS = 2
NGRAM = {"bleu": ["bleu1", "bleu2", "bleu3", "bleu4"], "meteor": ["meteor"], "rouge_l": ["rouge_l"],
         "cider_d": ["cider_d"]}
# row -> (outputs, options, candidate words per cell in a full run). "tokenizer" times the
# ptb-batch tokenizer alone; the n-gram rows include it, as pycocoevalcap's include its PTBTokenizer.
BERT, SENT = ["bertscore_p", "bertscore_r", "bertscore_f"], ["sentsim_max", "sentsim_mean", "sentsim_centroid"]
FAMILIES: dict[str, tuple[list[str], dict, int]] = {
    "tokenizer": ([], {}, 20000), **{k: (v, {}, 20000) for k, v in NGRAM.items()},
    "bleu_smooth": ([f"bleu{n}_smooth" for n in range(1, 5)], {}, 10000), "cider": (["cider"], {}, 10000),
    "ter": (["ter"], {}, 1000),  # sacrebleu's shift search: about 4 ms per word at 500 words
    "spice": (["spice"], {"spice": {"n_process": 1}}, 6000),
    "spider": (["spider"], {"spider": {"spice": {"n_process": 1}}}, 3000),
    "wembsim": (["wembsim"], {}, 10000), "wmd": (["wmd"], {}, 10000),
    "bertscore": (BERT, {}, 5000), "bertscore@windows": (BERT, {"bertscore": {"long_text": "windows"}}, 5000),
    "sentsim": (SENT, {}, 5000), "sentsim@windows": (SENT, {"sentsim": {"long_text": "windows"}}, 5000),
    "learned": (["learned"], {}, 2000),
    "learned@sentences": (["learned"], {"learned": {"long_text": "sentences"}}, 2000),
    "nneval": (["nneval"], {}, 2000),
    "qace_ref": (["qace_ref", "qace_ref_f1", "qace_ref_bertscore", "qace_ref_answerability"], {}, 2000),
}
REFERENCE = ("tokenizer", "bleu", "meteor", "rouge_l", "cider_d")  # rows pycocoevalcap also runs
NOT_RUN = {"clip_s": "CLIP-S/RefCLIP-S need OpenAI's ViT-B/32 weights and the COCO images, neither here",
           "pac_s": "PAC-S/RefPAC-S need the PAC-S checkpoint and the COCO images, neither here",
           "qace_img": "QACE-Img needs images, region features and a Visual-T5 checkpoint",
           "polos": "Polos needs the user's checkpoint and the COCO images",
           **dict.fromkeys(("clair", "fleur", "reffleur", "pairjudge"), "model judges: they need the user's model")}
QUICK_WORDS = 60


@functools.lru_cache(maxsize=1)
def _items():
    from capeval.stress.items import benchmark_items

    return benchmark_items("coco", seed=SEED)


def build_rows(length: int, n_rows: int, *, from_end: bool = False) -> tuple[list[str], list[list[str]]]:
    """``n_rows`` paragraphs of about ``length`` words and their references (module docstring)."""
    from capeval.stress.items import as_sentence

    items = _items()
    if from_end:
        items = items[::-1]
    cands: list[str] = []
    refs: list[list[str]] = []
    k = 0
    while len(cands) < n_rows:
        cand: list[str] = []
        ref: list[list[str]] = [[] for _ in range(N_REFS)]
        words = 0
        while k < len(items):
            nxt = as_sentence(items[k].candidate)
            if cand and abs(words + len(nxt.split()) - length) >= abs(words - length):
                break
            cand.append(nxt)
            words += len(nxt.split())
            for r in range(N_REFS):
                ref[r].append(as_sentence(items[k].references[r]))
            k += 1
        if not cand or (k == len(items) and words < length / 2):
            raise SystemExit(f"{n_rows} rows of {length} words need more images than the 5,000 of the split")
        cands.append(" ".join(cand))
        refs.append([" ".join(r) for r in ref])
    return cands, refs


# ---- child process: one cell ---------------------------------------------------------------

def _status_kib(field: str, pid: str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def _proc_cpu(pid: str) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _cpu_seconds() -> float:
    return sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))


def measure(fn, jvm_pid: str | None = None):
    """``fn()`` with its wall and CPU seconds and the peak RSS it added (module docstring);
    ``jvm_pid``: a long-lived child (pycocoevalcap's METEOR JVM) whose CPU and peak count too."""
    gc.collect()
    base = _status_kib("VmRSS")
    for pid in ["self"] + ([jvm_pid] if jvm_pid else []):
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    cpu0, t0 = _cpu_seconds() + (_proc_cpu(jvm_pid) if jvm_pid else 0.0), time.perf_counter()
    out = fn()
    wall, cpu = time.perf_counter() - t0, _cpu_seconds() + (_proc_cpu(jvm_pid) if jvm_pid else 0.0) - cpu0
    stats = {"seconds": wall, "cpu_seconds": cpu, "rss_before_mib": base / 1024,
             "peak_rss_delta_mib": (_status_kib("VmHWM") - base) / 1024}
    if jvm_pid:
        stats["jvm_peak_rss_mib"] = _status_kib("VmHWM", jvm_pid) / 1024
    return out, stats


def _digest(values) -> str:
    import numpy as np

    return hashlib.sha256(np.asarray(values, dtype=np.float64).tobytes()).hexdigest()[:16]


def _capeval_cell(family: str, rows, warm) -> dict:
    import warnings

    import capeval
    from capeval.text import tokenize_corpus

    outputs, options, _ = FAMILIES[family]
    def call(c, r):
        if family == "tokenizer":
            return tokenize_corpus(c, r, "ptb-batch")
        return capeval.score(c, r, outputs, tokenizer="ptb-batch", options=options)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        call(*warm)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out, stats = measure(lambda: call(*rows))
    stats["warnings"] = sorted({str(w.message)[:200] for w in seen})
    if family == "tokenizer":
        stats["tokens_sha256"] = hashlib.sha256(json.dumps(list(out)).encode()).hexdigest()[:16]
        return stats
    stats["corpus"] = dict(out.corpus)
    stats["per_caption_sha256"] = {k: _digest(v) for k, v in out.per_caption.items()}
    stats["signatures"] = dict(out.signatures)
    stats["details"] = {f: {k: v for k, v in d.items() if k in ("long_text", "out_of_range")}
                        for f, d in out.details.items() if isinstance(d, dict)}
    if family.startswith("bertscore"):
        stats["encoded_tokens_per_token"] = encoder_fill(*rows, windows=family.endswith("windows"))
    return stats


def encoder_fill(cands, refs, *, windows: bool) -> float:
    """Token positions the encoder runs per token of the distinct texts (an operation count):
    every forward pass is ROWS texts of one token length, filled with copies when fewer
    (capeval.resources.torch_runner), so lengths held by few texts cost up to ROWS times more."""
    from transformers import AutoTokenizer

    from capeval.metrics._bertscore_core import encode_sentences, token_window
    from capeval.metrics._bertscore_windows import plan_windows
    from capeval.resources.encoders import resolve_encoder
    from capeval.resources.torch_runner import ROWS, fixed_batches

    tok = AutoTokenizer.from_pretrained(str(resolve_encoder(None).location))
    ids = encode_sentences(tok, list(dict.fromkeys([*cands, *(r for rs in refs for r in rs)])), full=windows)
    window = token_window(tok) or max(map(len, ids))
    lengths = [len(t) for t in (plan_windows(ids, window)[0] if windows else ids)]
    return sum(lengths[b[0]] * ROWS for b in fixed_batches(lengths)) / sum(lengths)


def _reference_cell(family: str, rows, warm) -> dict:
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.meteor.meteor import Meteor
    from pycocoevalcap.rouge.rouge import Rouge
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    scorer = {"bleu": lambda: Bleu(4), "meteor": Meteor, "rouge_l": Rouge, "cider_d": Cider,
              "tokenizer": lambda: None}[family]()
    jvm = str(scorer.meteor_p.pid) if family == "meteor" else None

    def run(cands, refs):
        def tok(d):
            return PTBTokenizer().tokenize({i: [{"caption": c} for c in v] for i, v in d.items()})
        t0 = time.perf_counter()
        gts, res = tok(dict(enumerate(refs))), tok({i: [c] for i, c in enumerate(cands)})
        seconds = time.perf_counter() - t0
        return seconds, (gts, res) if scorer is None else scorer.compute_score(gts, res)

    run(*warm)
    (tok_seconds, out), stats = measure(lambda: run(*rows), jvm)
    stats["tokenizer_seconds"] = tok_seconds
    stats["jvm_peak_rss_mib"] = max(stats.get("jvm_peak_rss_mib", 0.0),
                                    resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    if family == "tokenizer":
        toks = [[out[1][i][0] for i in range(len(out[1]))], [out[0][i] for i in range(len(out[0]))]]
        return {**stats, "tokens_sha256": hashlib.sha256(json.dumps(toks).encode()).hexdigest()[:16]}
    score, per = out if family == "bleu" else ([out[0]], [out[1]])
    stats["corpus"] = {n: float(x) for n, x in zip(NGRAM[family], score)}
    stats["per_caption_sha256"] = {n: _digest(p) for n, p in zip(NGRAM[family], per)}
    return stats


def run_cell(spec: dict) -> None:
    rows = json.loads(Path(spec["rows"]).read_text())
    cell = _capeval_cell if spec["side"] == "capeval" else _reference_cell
    stats = cell(spec["family"], (rows["cands"], rows["refs"]), (rows["warm_cands"], rows["warm_refs"]))
    stats["load_average_after"] = os.getloadavg()
    Path(spec["out"]).write_text(json.dumps(stats))


# ---- parent: the run -----------------------------------------------------------------------

def _pinned_env(cache: Path) -> dict[str, str]:
    """The environment of every cell: a private cache, each resource pinned where it resolves now
    (some resolve inside the user's cache)."""
    from capeval.resources.resolver import ResourceNotFound, list_resources, resolve

    env = dict(os.environ, CAPEVAL_CACHE=str(cache), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    for spec in list_resources():
        try:
            env[spec.env] = str(resolve(spec.name))
        except ResourceNotFound:
            pass
    return env


def _words(cands, refs) -> dict[str, int]:
    c = sum(len(x.split()) for x in cands)
    return {"rows": len(cands), "candidate_words": c, "words": c + sum(len(x.split()) for r in refs for x in r)}


def _run_cell(family: str, side: str, rows_path: Path, env: dict, work: Path) -> dict:
    out = work / f"{side}-{family}-{rows_path.stem}.out.json"
    shutil.rmtree(Path(env["CAPEVAL_CACHE"]) / "spice-py", ignore_errors=True)  # SPICE-py measured cold
    spec = {"family": family, "side": side, "rows": str(rows_path), "out": str(out)}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--cell", json.dumps(spec)], env=env,
                          capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0 or not out.exists():
        return {"error": done.stderr[-2000:] or f"exit {done.returncode}"}
    stats = json.loads(out.read_text())
    stats["process_seconds"] = time.perf_counter() - t0
    return stats


def run(families: list[str], lengths: list[int], budget, work: Path) -> dict:
    env = _pinned_env(work / "cache")
    cells: dict[str, dict] = {}
    warm = build_rows(10, WARMUP_ROWS, from_end=True)
    for length in lengths:
        for family in families:
            cands, refs = build_rows(length, max(2, round(budget(family) / length)))  # CIDEr's df needs 2
            rows_path = work / f"{family}-{length}.json"
            rows_path.write_text(json.dumps({"cands": cands, "refs": refs, "warm_cands": warm[0],
                                             "warm_refs": warm[1]}))
            sides = ("capeval", "pycocoevalcap") if family in REFERENCE else ("capeval",)
            for side in sides:
                stats = _run_cell(family, side, rows_path, env, work)
                stats.update(_words(cands, refs))
                cells.setdefault(family, {}).setdefault(side, {})[str(length)] = stats
                print(f"{family:18s} {side:13s} {length:4d} words: "
                      + (f"{stats['seconds']:.3f} s" if "seconds" in stats else "ERROR"), flush=True)
    return cells


def summarise(cells: dict, lengths: list[int]) -> dict:
    """Per-word costs, their growth from 50 words, the ratios to pycocoevalcap and whether both
    sides' numbers agree, and the targets of issue 43 item 3 read from them."""
    out: dict = {"per_word_us": {}, "growth_vs_50": {}, "ratio_vs_pycocoevalcap": {}, "agree": {}}
    for family, sides in cells.items():
        for side, by_len in sides.items():
            key = family if side == "capeval" else f"{family} (pycocoevalcap)"
            per = {L: c["seconds"] / c["words"] * 1e6 if "seconds" in c else None for L, c in by_len.items()}
            out["per_word_us"][key] = per
            if (at50 := per.get("50")) is not None:
                out["growth_vs_50"][key] = {L: v / at50 for L, v in per.items() if v and int(L) > 50}
        if "pycocoevalcap" in sides:
            ours, ref = sides["capeval"], sides["pycocoevalcap"]
            out["ratio_vs_pycocoevalcap"][family] = {L: ref[L]["seconds"] / ours[L]["seconds"] for L in ours
                                                     if "seconds" in ours[L] and "seconds" in ref.get(L, {})}
            keys = ("tokens_sha256",) if family == "tokenizer" else ("corpus", "per_caption_sha256")
            out["agree"][family] = {L: all(ours[L].get(k) == ref.get(L, {}).get(k) for k in keys) for L in ours}
    growth = {k: max(v.values()) for k, v in out["growth_vs_50"].items() if v and "(" not in k}
    ratios = out["ratio_vs_pycocoevalcap"]
    spice = cells.get("spice", {}).get("capeval", {})
    out["targets"] = {
        "flat_tolerance": FLAT,
        "largest_growth_vs_50": growth,
        "not_flat": sorted(k for k, g in growth.items() if g > FLAT),
        "ngram_ratio_300_vs_10": {f: (r.get("300"), r.get("10")) for f, r in ratios.items() if f in NGRAM},
        "spice_words_per_second": {L: c["words"] / c["seconds"] for L, c in spice.items() if "seconds" in c},
        "spice_words_per_cpu_second": {L: c["words"] / c["cpu_seconds"] for L, c in spice.items() if "seconds" in c},
    }
    return out


FLAT = 1.25  # a per-word cost within 1.25x of the 50-word one counts as flat (run-to-run noise is 15-20 %)


def _unlisted() -> list[str]:
    """Registered families this script neither runs nor says why not (a family added later)."""
    import capeval

    rows = {f.split("@")[0] for f in FAMILIES} | set(NOT_RUN)
    return sorted({o.family for o in capeval.list_metrics()} - rows)


def _machine() -> dict:
    import capeval

    java = subprocess.run(["java", "-version"], capture_output=True, text=True)
    from importlib.metadata import version

    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "capeval": capeval.__version__, "pycocoevalcap": version("pycocoevalcap"),
            "torch": version("torch"), "spacy": version("spacy"), "java": java.stderr.splitlines()[:1]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_WORDS} candidate words per cell, 10 and 50 words")
    ap.add_argument("--lengths", help="comma-separated words per caption (default 10,50,100,300,500)")
    ap.add_argument("--families", help=f"rows to run (default all: {','.join(FAMILIES)})")
    ap.add_argument("--out", default=str(HERE / "results" / "long_captions.json"))
    ap.add_argument("--doc", help="a Markdown file whose long-captions block gets the tables")
    ap.add_argument("--render", help="only render this results file (into --doc, or print)")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.cell:
        return run_cell(json.loads(a.cell))
    if a.render:
        md = render(json.loads(Path(a.render).read_text()))
        return write_doc(Path(a.doc), md) if a.doc else print(md)
    lengths = [int(x) for x in a.lengths.split(",")] if a.lengths else ([10, 50] if a.quick else list(LENGTHS))
    families = a.families.split(",") if a.families else list(FAMILIES)
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise SystemExit(f"unknown families {unknown}; known: {', '.join(FAMILIES)}")
    load0, t0 = os.getloadavg(), time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="long_captions_") as tmp:
        cells = run(families, lengths, lambda f: QUICK_WORDS if a.quick else FAMILIES[f][2], Path(tmp))
    out = Path(a.out)
    result = {"benchmark": "long_captions", "out": os.path.relpath(out, REPO) if out.is_absolute() else str(out),
              "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "quick": a.quick,
              "lengths": lengths, "seed": SEED, "references_per_row": N_REFS, "warmup_rows": WARMUP_ROWS,
              "tokenizer": "ptb-batch", "families": {f: {"outputs": FAMILIES[f][0], "options": FAMILIES[f][1]}
                                                      for f in families},
              "not_run": NOT_RUN, "unlisted_families": _unlisted(), "machine": _machine(), "load_average_at_start": load0,
              "load_average_at_end": os.getloadavg(), "total_seconds": time.perf_counter() - t0,
              "command": " ".join(["python", "benchmarks/long_captions.py", *sys.argv[1:]]),
              "cells": cells, "summary": summarise(cells, lengths)}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(render(result))
    if a.doc:
        write_doc(Path(a.doc), render(result))


if __name__ == "__main__":
    main()
