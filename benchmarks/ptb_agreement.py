"""Agreement of the pure-Python PTB tokenizer with the CoreNLP 3.4.1 jar on every caption we have.

Usage::

    python benchmarks/ptb_agreement.py            # writes benchmarks/results/ptb_agreement.json

Each source's strings are deduplicated, tokenized once by ``capeval.text.ptb`` and once by the
jar (all distinct strings of all sources in one batch), and compared. Strings holding a
line-break character cannot go through the line-based jar one-to-one; they are counted as
``skipped_line_break`` and left out of the comparison. Also records tokenizer throughput on the
distinct Flickr8k-Expert strings.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from capeval.paths import data_root
from capeval.validation import find_line_break

MAX_EXAMPLES = 20


# ---------------------------------------------------------------------------------------------
# Loaders: one function per source, each returning every caption string it holds (with repeats).


def _mat_strings(value) -> Iterable[str]:
    """Walk a scipy.io.loadmat value (nested object arrays) and yield every string in it."""
    import numpy as np

    if isinstance(value, str):
        yield value
    elif isinstance(value, np.ndarray):
        if value.dtype.kind == "U":
            for s in value.ravel():
                yield str(s)
        elif value.dtype.kind == "O":
            for v in value.ravel():
                yield from _mat_strings(v)
        elif value.dtype.names:
            for rec in value.ravel():
                for name in value.dtype.names:
                    yield from _mat_strings(rec[name])
    elif isinstance(value, np.void) and value.dtype.names:
        for name in value.dtype.names:
            yield from _mat_strings(value[name])


def _mat_field(path: Path, var: str, fields: tuple[str, ...]) -> list[str]:
    from scipy.io import loadmat

    arr = loadmat(str(path))[var]
    out: list[str] = []
    for rec in arr.ravel():
        for f in fields:
            out.extend(_mat_strings(rec[f]))
    return out


def flickr8k_token(root: Path) -> list[str]:
    lines = (root / "flickr8k/Flickr8k_text/Flickr8k.token.txt").read_text(encoding="utf-8").splitlines()
    return [line.split("\t", 1)[1] for line in lines if "\t" in line]


def flickr8k_expert_cf_candidates(root: Path) -> list[str]:
    base = root / "flickr8k/Flickr8k_text"
    caps = {}
    for line in (base / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        if "\t" in line:
            key, cap = line.split("\t", 1)
            caps[key] = cap
    out = []
    for name in ("ExpertAnnotations.txt", "CrowdFlowerAnnotations.txt"):
        for line in (base / name).read_text(encoding="utf-8").splitlines():
            parts = line.split("\t")
            if len(parts) > 1:
                out.append(caps[parts[1]])
    return out


def flickr8k_expert_json(root: Path) -> list[str]:
    data = json.loads((root / "flickr8k/clipscore_format_EXPERT/flickr8k.json").read_text(encoding="utf-8"))
    out = []
    for item in data.values():
        out.extend(item["ground_truth"])
        out.extend(j["caption"] for j in item["human_judgement"])
    return out


def flickr8k_elliott_keller(root: Path) -> list[str]:
    base = root / "flickr8k/elliott_keller_2014"
    out = []
    for name in ("candidates", "ref-0", "ref-1", "ref-2", "ref-3", "ref-4"):
        out.extend((base / name).read_text(encoding="utf-8").split("\n"))
    return [s for s in out if s]


def composite(root: Path) -> list[str]:
    out = []
    with open(root / "composite/composite_umic_decoded.jsonl", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                rec = json.loads(line)
                out.append(rec["candidate"])
                out.extend(rec.get("refs_flickr8k", []))
    return out


def pascal50s(root: Path) -> list[str]:
    base = root / "pascal50s"
    out: list[str] = []
    data = json.loads((base / "EXPERT_processed/pascal_50s.json").read_text(encoding="utf-8"))
    for items in data.values():
        for item in items:
            out.extend(item["captions"])
            out.extend(item["references"])
    out.extend(_mat_field(base / "vrama91_cider-matlab/pair_pascal.mat", "new_input", ("sent1", "sent2")))
    out.extend(_mat_field(base / "vrama91_cider-matlab/pascal50S.mat", "refs", ("sent",)))
    out.extend(_mat_field(base / "vrama91_cider-matlab/pascal_cands.mat", "cands", ("sent",)))
    out.extend(_mat_field(base / "shinepsunny_dl_project/pascal50S.mat", "train_sent_final", ("sentences",)))
    return out


def abstract50s(root: Path) -> list[str]:
    base = root / "abstract50s"
    out = _mat_field(base / "consensus_abstract.mat", "triplets", ("A", "B", "C"))
    out.extend(_mat_field(base / "abstract50S.mat", "abs_sent", ("sentences",)))
    return out


def machine_captions(root: Path) -> list[str]:
    base = root / "machine_captions"
    out = []
    for path in sorted((base / "tanti2018_where-image2/results").glob("*/generated_captions.txt")):
        out.extend(path.read_text(encoding="utf-8").splitlines())
    sql = (base / "tanti_phd_humaneval/data.sql").read_text(encoding="utf-8")
    import re

    for m in re.finditer(r"\(\s*'([^']*)',((?:\s*'(?:[^'\\]|\\.)*',?){6})\s*\)", sql):
        fields = re.findall(r"'((?:[^'\\]|\\.)*)'", m.group(2))
        out.extend(f.replace("\\'", "'") for f in fields[:5])
    return out


def references_karpathy_test(root: Path) -> list[str]:
    base = root / "references_karpathy_test"
    out = []
    for name in ("coco_precomp/testall_caps.txt", "f30k_precomp/test_caps.txt"):
        out.extend((base / name).read_text(encoding="utf-8").splitlines())
    return out


def foil_samples(root: Path) -> list[str]:
    out = []
    for name in ("sample_foil_test2017.json", "sample_foil_train2017.json"):
        data = json.loads((root / "foil_sample_only" / name).read_text(encoding="utf-8"))
        out.extend(a["caption"] for a in data["annotations"])
    return out


SOURCES: dict[str, Callable[[Path], list[str]]] = {
    "flickr8k_token": flickr8k_token,
    "flickr8k_expert_cf_candidates": flickr8k_expert_cf_candidates,
    "flickr8k_expert_json": flickr8k_expert_json,
    "flickr8k_elliott_keller": flickr8k_elliott_keller,
    "composite": composite,
    "pascal50s": pascal50s,
    "abstract50s": abstract50s,
    "machine_captions": machine_captions,
    "references_karpathy_test": references_karpathy_test,
    "foil_samples": foil_samples,
}


def load_sources(root: Path) -> dict[str, list[str]]:
    return {name: fn(root) for name, fn in SOURCES.items()}


# ---------------------------------------------------------------------------------------------


def _throughput(strings: list[str], repeats: int = 7) -> float:
    """Best-of-``repeats`` captions/s (warm: the lexer is compiled by the comparison run)."""
    from capeval.text import ptb

    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        ptb.tokenize(strings)
        best = min(best, time.perf_counter() - t0)
    return len(strings) / best


def run(root: Path, out_path: Path) -> dict:
    from capeval.text import ptb, ptb_java

    sources = load_sources(root)
    distinct_all: dict[str, None] = {}
    skipped: dict[str, int] = {}
    for name, strings in sources.items():
        n_skip = 0
        for s in dict.fromkeys(strings):
            if find_line_break(s) is not None:
                n_skip += 1
            else:
                distinct_all[s] = None
        skipped[name] = n_skip
    strings = list(distinct_all)

    # Each caption is followed by a neutral sentinel line: the jar lets a caption's last token
    # depend on the next line's first characters (docs/TOKENIZER.md), which no per-caption
    # emulation can see. The plain batch is run too, to count how often that context matters.
    t0 = time.perf_counter()
    java_out = ptb_java.tokenize([line for s in strings for line in (s, "x")])[::2]
    t_java = time.perf_counter() - t0
    java_plain = ptb_java.tokenize(strings)
    context_dependent = [
        {"input": s, "followed_by": strings[i + 1][:20], "in_batch": b, "alone": a}
        for i, (s, a, b) in enumerate(zip(strings, java_out, java_plain))
        if a != b
    ]
    t0 = time.perf_counter()
    py_out = ptb.tokenize(strings)
    t_py = time.perf_counter() - t0
    java_map = dict(zip(strings, java_out))
    py_map = dict(zip(strings, py_out))

    per_source = {}
    for name, src in sources.items():
        distinct = [s for s in dict.fromkeys(src) if s in java_map]
        diffs = [s for s in distinct if java_map[s] != py_map[s]]
        per_source[name] = {
            "total": len(src),
            "distinct": len(dict.fromkeys(src)),
            "compared": len(distinct),
            "skipped_line_break": skipped[name],
            "differing": len(diffs),
            "examples": [
                {"input": s, "java": java_map[s], "python": py_map[s]} for s in diffs[:MAX_EXAMPLES]
            ],
        }

    expert = list(dict.fromkeys(flickr8k_expert_json(root)))
    report = {
        "benchmark": "ptb_agreement",
        "signature": {"python": f"tok:ptb-py@{_version()}", "java": "tok:ptb-java-3.4.1"},
        "distinct_strings_compared": len(strings),
        "differing_total": sum(v["differing"] for v in per_source.values()),
        "per_source": per_source,
        "jar_context_dependent": {
            "count": len(context_dependent),
            "examples": context_dependent[:MAX_EXAMPLES],
        },
        "timing_s": {"java_all_distinct": round(t_java, 3), "python_all_distinct": round(t_py, 3)},
        "throughput_captions_per_s": {
            "python_flickr8k_expert_distinct": round(_throughput(expert)),
            "n_strings": len(expert),
        },
        "machine": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_1min": round(os.getloadavg()[0], 2),
        },
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return report


def _version() -> str:
    from capeval import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=None, help="data root (default: $CAPEVAL_DATA)")
    ap.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "ptb_agreement.json"
    )
    args = ap.parse_args(argv)
    root = args.data or data_root(required=True)
    report = run(root, args.out)
    for name, v in report["per_source"].items():
        print(f"{name:32s} total {v['total']:7d} distinct {v['distinct']:6d} differing {v['differing']}")
    print("differing total:", report["differing_total"])
    print("throughput (captions/s):", report["throughput_captions_per_s"])
    return 0 if report["differing_total"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
