"""Native METEOR vs coco's jar on every benchmark candidate set.

Each set is validated and PTB-tokenized as ``capeval.score`` does, then scored by both
backends of ``capeval.metrics.meteor.Meteor``; per caption the scores must be identical
(``==``, and the count within 1e-9 is reported too), as must the jar's statistics lines and
the corpus score. ``--raw`` also scores the untokenized text (the jar's normaliser then does
all the work).

    python benchmarks/meteor_native_agreement.py [--sets a,b] [--raw a,b] [--result PATH]
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from _common import candidate_sets  # noqa: E402  (scripts run from benchmarks/)

HERE = Path(__file__).resolve().parent


def compare(jar, native, cands, refs) -> dict:
    t0 = time.perf_counter()
    want = jar.compute(cands, refs)
    t1 = time.perf_counter()
    got = native.compute(cands, refs)
    t2 = time.perf_counter()
    a, b = got.per_caption["meteor"], want.per_caption["meteor"]
    diff = np.abs(a - b)
    return {
        "rows": len(cands),
        "distinct_units": got.details["distinct_units"],
        "per_caption_identical": int((a == b).sum()),
        "per_caption_within_1e-9": int((diff <= 1e-9).sum()),
        "per_caption_max_abs_diff": float(diff.max()),
        "stats_lines_identical": int(sum(x == y for x, y in zip(got.details["stats"], want.details["stats"]))),
        "corpus_native": got.corpus["meteor"],
        "corpus_jar": want.corpus["meteor"],
        "corpus_identical": got.corpus["meteor"] == want.corpus["meteor"],
        "jar_seconds": round(t1 - t0, 2),
        "native_seconds": round(t2 - t1, 2),
    }


def main() -> None:
    from capeval.metrics.meteor import Meteor
    from capeval.text import tokenize_corpus
    from capeval.validation import validate_corpus

    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", help="comma-separated subset of the candidate sets (default: all)")
    ap.add_argument("--raw", default="flickr8k-expert,composite,pascal50s,abstract50s,tanti-human200",
                    help="sets also scored untokenized ('' for none)")
    ap.add_argument("--result", type=Path, default=HERE / "results" / "meteor_native_agreement.json")
    args = ap.parse_args()
    sets = candidate_sets()
    names = args.sets.split(",") if args.sets else list(sets)
    raw = [n for n in args.raw.split(",") if n] if args.raw else []
    out: dict = {"benchmark": "native METEOR vs coco's meteor-1.5.jar (-l en -norm) on every benchmark candidate set",
                 "tokenizer": "ptb (capeval.score's default)", "sets": {}, "raw_sets": {}}
    with Meteor(backend="jar", workers=1) as jar:
        native = Meteor(backend="native")
        for name in names:
            cands, refs = validate_corpus(*sets[name], allow_empty=True)
            tc, tr = tokenize_corpus(cands, refs, "ptb")
            out["sets"][name] = compare(jar, native, tc, tr)
            print(name, out["sets"][name], flush=True)
            if name in raw:
                out["raw_sets"][name] = compare(jar, native, list(cands), [list(r) for r in refs])
                print(name, "raw", out["raw_sets"][name], flush=True)
    all_rows = list(out["sets"].values()) + list(out["raw_sets"].values())
    out["total"] = {
        "rows": sum(r["rows"] for r in all_rows),
        "per_caption_identical": sum(r["per_caption_identical"] for r in all_rows),
        "per_caption_within_1e-9": sum(r["per_caption_within_1e-9"] for r in all_rows),
        "corpus_identical": all(r["corpus_identical"] for r in all_rows),
    }
    out["signature_native"] = "meteor_1.5_coco|backend:native"
    out["machine"] = {"cpus": __import__("os").cpu_count(), "python": platform.python_version()}
    out["command"] = "python benchmarks/meteor_native_agreement.py"
    out["note"] = "timings are incidental (taken on a shared, loaded machine); see meteor_native.json for speed"
    args.result.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out["total"]))


if __name__ == "__main__":
    main()
