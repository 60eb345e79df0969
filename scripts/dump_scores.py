"""Every number of a fixed workload, as JSON, to diff before and after a refactoring of scoring.

The workload (real COCO captions, ``$CAPEVAL_DATA/references_karpathy_test``; the first
``--images`` images, five captions each): a row's references are captions 2-5 of its image and
its candidate caption 1 of that image or of another one (every third row), with every tenth
row repeated so deduplication is exercised. On it:

* ``capeval.score`` of each metric group that runs on this machine (a group whose extra or
  resource is missing is recorded as skipped, with its message): corpus and per-caption scores,
  signatures and details;
* ``capeval.score_stream`` of the streamable groups with ``--jobs 1`` and ``--jobs 2`` in
  chunks of ``--chunk-size`` rows;
* a corpus bootstrap (``stats.bootstrap.corpus_distribution``, 100 resamples) of each output
  whose family's statistics exist;
* ``capeval bench flickr8k-expert -m bleu4,cider_d,meteor --scores len=FILE --json`` (no cache;
  the scores file holds each unit's candidate length).

Floats are written with ``repr`` (exact), NaN as the string ``"nan"``. Compare two dumps (timing
and parse-cache fields left out) with
``python scripts/dump_scores.py --diff A.json B.json``: it prints every differing value and exits
1 when there is one.

    CAPEVAL_DATA=/work/shared/data python scripts/dump_scores.py --out before.json
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

GROUPS = [
    ["bleu1", "bleu2", "bleu3", "bleu4"], ["bleu1_smooth", "bleu4_smooth"], ["meteor"], ["rouge_l"],
    ["cider_d"], ["cider"], ["spice", "spice_object", "spice_relation"], ["ter"], ["spider"],
    ["wembsim"], ["wmd"], ["bertscore_f"], ["sentsim_max"], ["learned"], ["nneval"], ["qace_ref"],
    ["bleu4", "cider_d", "meteor", "rouge_l", "ter"],
]
#: Fields of timing and of process state (SPICE's parse cache: warm or cold), not scores.
TIMING = ("time", "seconds", "elapsed", "duration", "created", "cpu_s", "per_s", "cache_hits", "_parsed", "_loaded")


def plain(x):
    """JSON-ready, exact: floats as repr strings."""
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return plain(x.tolist())
    if isinstance(x, (np.floating, float)):
        return "nan" if math.isnan(x) else repr(float(x))
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (str, int, bool)) or x is None:
        return x
    return f"<{type(x).__name__}>"


def rows(n_images: int) -> tuple[list[str], list[list[str]]]:
    from capeval.paths import data_root

    path = data_root() / "references_karpathy_test" / "coco_precomp" / "testall_caps.txt"
    lines = path.read_text(encoding="utf-8").splitlines()[: 5 * n_images]
    caps = [lines[5 * i: 5 * i + 5] for i in range(n_images)]
    cands, refs = [], []
    for i, five in enumerate(caps):
        other = caps[(i + 7) % n_images][0]
        cands.append(other if i % 3 == 0 else five[0])
        refs.append(five[1:])
        if i % 10 == 0:
            cands.append(cands[-1])
            refs.append(list(refs[-1]))
    return cands, refs


def result_dict(res) -> dict:
    details = {k: v for k, v in res.details.items() if k != "statistics"}
    return {"corpus": plain(res.corpus), "per_caption": plain(res.per_caption),
            "signatures": dict(res.signatures), "details": plain(details)}


def in_memory(cands, refs) -> tuple[dict, list[list[str]]]:
    import capeval

    out, ran = {}, []
    for group in GROUPS:
        key = ",".join(group)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = capeval.score(cands, refs, group)
        except Exception as e:  # noqa: BLE001 - a group that cannot run here is recorded as such
            out[key] = {"skipped": f"{type(e).__name__}: {str(e)[:200]}"}
            continue
        out[key] = result_dict(res)
        ran.append(group)
    return out, ran


def streamed(cands, refs, groups, chunk_size: int) -> dict:
    import capeval
    from capeval.plan import ScoringPlan

    out = {}
    for group in groups:
        if ScoringPlan.build(group).cannot_stream:
            continue
        for jobs in (1, 2):
            key = f"{','.join(group)}|jobs={jobs}"
            with tempfile.TemporaryDirectory() as d, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    res = capeval.score_stream(list(zip(cands, refs)), group, chunk_size=chunk_size, jobs=jobs,
                                               run_dir=Path(d) / "run", keep_per_caption=True)
                except Exception as e:  # noqa: BLE001
                    out[key] = {"failed": f"{type(e).__name__}: {str(e)[:200]}"}
                    continue
            out[key] = result_dict(res)
    return out


def bootstrap(cands, refs, groups) -> dict:
    from capeval.metrics.registry import family_for
    from capeval.stats.bootstrap import corpus_distribution
    from capeval.text import tokenize_corpus

    tokens = tokenize_corpus(cands, refs, "ptb")
    out = {}
    for name in sorted({n for g in groups for n in g}):
        cls = family_for(name)
        texts = tokens if cls.text_input == "tokenized" else (cands, refs)
        try:
            with warnings.catch_warnings(), cls() as m:
                warnings.simplefilter("ignore")
                st = m.statistics(*texts)
        except Exception as e:  # noqa: BLE001
            out[name] = {"failed": f"{type(e).__name__}: {str(e)[:200]}"}
            continue
        dist = corpus_distribution(st, name, n_resamples=100, seed=12345)
        out[name] = {"distribution": plain(dist), "corpus": plain(st.corpus()),
                     "per_caption": plain(st.per_caption()), "fields": plain(st.fields)}
    return out


def drop_timing(x):
    if isinstance(x, dict):
        return {k: drop_timing(v) for k, v in x.items() if not any(t in k for t in TIMING)}
    if isinstance(x, list):
        return [drop_timing(v) for v in x]
    return x


def bench() -> dict:
    with tempfile.TemporaryDirectory() as d:
        units = Path(d) / "units.jsonl"
        subprocess.run(["capeval", "data", "export", "flickr8k-expert", "-o", str(units)], check=True,
                       capture_output=True)
        scores = Path(d) / "len.jsonl"
        with units.open(encoding="utf-8") as f, scores.open("w", encoding="utf-8") as g:
            for line in f:
                u = json.loads(line)
                g.write(json.dumps({"id": u["id"], "score": len(u["candidate"])}) + "\n")
        out = Path(d) / "bench.json"
        p = subprocess.run(["capeval", "bench", "flickr8k-expert", "-m", "bleu4,cider_d,meteor", "--scores",
                            f"len={scores}", "--no-cache", "--bootstrap", "200", "--json", str(out)],
                           capture_output=True, text=True)
        if p.returncode:
            return {"failed": p.stderr[-2000:]}
        return drop_timing(json.loads(out.read_text(encoding="utf-8")))


def diff(a, b, path="") -> list[str]:
    if type(a) is not type(b):
        return [f"{path}: {a!r:.120} != {b!r:.120}"]
    if isinstance(a, dict):
        out = [f"{path}/{k}: only in {'A' if k in a else 'B'}" for k in sorted(set(a) ^ set(b))]
        for k in sorted(set(a) & set(b)):
            out += diff(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r:.120} != {b!r:.120}"]


def count_values(x) -> int:
    if isinstance(x, dict):
        return sum(count_values(v) for v in x.values())
    if isinstance(x, list):
        return sum(count_values(v) for v in x)
    return 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--images", type=int, default=270)
    ap.add_argument("--chunk-size", type=int, default=64)
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--diff", nargs=2, type=Path, metavar=("A", "B"))
    args = ap.parse_args(argv)
    if args.diff:
        a, b = (drop_timing(json.loads(p.read_text(encoding="utf-8"))) for p in args.diff)
        found = diff(a, b)
        print("\n".join(found[:200]))
        print(f"{len(found)} differing of {count_values(a)} values")
        return 1 if found else 0
    if args.out is None:
        ap.error("--out or --diff")
    os.environ.setdefault("CAPEVAL_DATA", "/work/shared/data")
    cands, refs = rows(args.images)
    memory, ran = in_memory(cands, refs)
    dump = {"rows": len(cands), "memory": memory, "stream": streamed(cands, refs, ran, args.chunk_size),
            "bootstrap": bootstrap(cands, refs, ran)}
    if not args.no_bench:
        dump["bench"] = bench()
    args.out.write_text(json.dumps(dump, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{count_values(dump)} values; groups run: {[','.join(g) for g in ran]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
