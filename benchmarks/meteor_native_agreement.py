"""Native METEOR vs coco's jar on every benchmark candidate set.

Each set is validated and PTB-tokenized as ``capeval.score`` does, then scored by both
backends of ``capeval.metrics.meteor.Meteor``; per caption the scores must be identical
(``==``, and the count within 1e-9 is reported too), as must the jar's statistics lines and
the corpus score. ``--raw`` also scores the untokenized text (the jar's normaliser then does
all the work). Rows whose scores or statistics differ are listed (first ``--list`` of each
set) with both statistics lines, so a difference can be traced to a matcher or the search.

The result file is rewritten after every set (an interrupted run keeps what it finished).
Sets can also be run one at a time (``--sets a``): the result file is then updated in place
(the other sets' entries kept) and the totals recomputed over every set it holds.

    python benchmarks/meteor_native_agreement.py [--sets a,b] [--raw a,b] [--rows N] [--result PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import candidate_sets  # noqa: E402  (scripts run from benchmarks/)

HERE = Path(__file__).resolve().parent
DEFAULT_RAW = "flickr8k-expert,composite,pascal50s,abstract50s,tanti-human200"


def compare(jar, native, cands, refs, n_list: int) -> dict:
    load = os.getloadavg()
    t0 = time.perf_counter()
    want = jar.compute(cands, refs)
    t1 = time.perf_counter()
    got = native.compute(cands, refs)
    t2 = time.perf_counter()
    a, b = got.per_caption["meteor"], want.per_caption["meteor"]
    diff = np.abs(a - b)
    sa, sb = got.details["stats"], want.details["stats"]
    bad = [i for i in range(len(cands)) if a[i] != b[i] or sa[i] != sb[i]]
    return {
        "rows": len(cands),
        "distinct_units": got.details["distinct_units"],
        "per_caption_identical": int((a == b).sum()),
        "per_caption_within_1e-9": int((diff <= 1e-9).sum()),
        "per_caption_max_abs_diff": float(diff.max()),
        "stats_lines_identical": int(sum(x == y for x, y in zip(sa, sb))),
        "corpus_native": got.corpus["meteor"],
        "corpus_jar": want.corpus["meteor"],
        "corpus_identical": got.corpus["meteor"] == want.corpus["meteor"],
        "differing_rows": len(bad),
        "differences": [
            {"row": i, "candidate": cands[i], "references": list(refs[i]),
             "native": float(a[i]), "jar": float(b[i]), "stats_native": sa[i], "stats_jar": sb[i]}
            for i in bad[:n_list]
        ],
        "signature_native": {k: str(v) for k, v in got.signature_fields.items()},
        "signature_jar": {k: str(v) for k, v in want.signature_fields.items()},
        # incidental: the machine is shared and the JVM side pays its start-up on the first set
        "jar_seconds": round(t1 - t0, 2),
        "native_seconds": round(t2 - t1, 2),
        "load_average_at_start": [round(x, 2) for x in load],
        "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def code_version() -> dict:
    """The commit the native backend was run from, and whether its files had local changes."""
    def git(*a: str) -> str:
        try:
            return subprocess.run(["git", *a], cwd=HERE, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return "unknown"
    return {"commit": git("rev-parse", "HEAD"),
            "native_backend_modified": git("status", "--porcelain", "--", "../src/capeval/metrics/_meteor_native",
                                           "../src/capeval/metrics/meteor.py") != ""}


def totals(out: dict) -> dict:
    all_rows = list(out["sets"].values()) + list(out["raw_sets"].values())
    return {
        "sets": len(out["sets"]),
        "raw_sets": len(out["raw_sets"]),
        "rows": sum(r["rows"] for r in all_rows),
        "per_caption_identical": sum(r["per_caption_identical"] for r in all_rows),
        "per_caption_within_1e-9": sum(r["per_caption_within_1e-9"] for r in all_rows),
        "stats_lines_identical": sum(r["stats_lines_identical"] for r in all_rows),
        "corpus_identical": all(r["corpus_identical"] for r in all_rows),
    }


def main() -> None:
    from capeval.metrics.meteor import Meteor
    from capeval.text import tokenize_corpus
    from capeval.validation import validate_corpus

    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", help="comma-separated subset of the candidate sets (default: all); "
                                   "the result file is then updated, not replaced")
    ap.add_argument("--raw", default=DEFAULT_RAW, help="sets also scored untokenized ('' for none)")
    ap.add_argument("--rows", type=int, default=None,
                    help="first N rows of each set only (a smoke test; never written over a full result)")
    ap.add_argument("--list", type=int, default=50, help="differing rows listed per set")
    ap.add_argument("--result", type=Path, default=None,
                    help="default: benchmarks/results/meteor_native_agreement.json, or with --rows N "
                         "meteor_native_agreement_rowsN.json in the temp directory")
    args = ap.parse_args()
    if args.result is None:
        args.result = (HERE / "results" / "meteor_native_agreement.json" if args.rows is None
                       else Path(tempfile.gettempdir()) / f"meteor_native_agreement_rows{args.rows}.json")
    sets = candidate_sets()
    names = args.sets.split(",") if args.sets else list(sets)
    raw = [n for n in args.raw.split(",") if n] if args.raw else []
    unknown = sorted(set(names + raw) - set(sets))
    if unknown:
        sys.exit(f"unknown candidate set(s) {', '.join(unknown)}; known: {', '.join(sets)}")
    if args.rows is not None and args.rows < 1:
        sys.exit("--rows must be >= 1")
    out: dict = {"benchmark": "native METEOR vs coco's meteor-1.5.jar (-l en -norm) on every benchmark candidate set",
                 "tokenizer": "ptb (capeval.score's default)", "rows_per_set": args.rows, "sets": {}, "raw_sets": {}}
    if args.sets and args.result.is_file():
        old = json.loads(args.result.read_text())
        if old.get("rows_per_set") == args.rows:  # only merge runs of the same size
            out["sets"], out["raw_sets"] = old.get("sets", {}), old.get("raw_sets", {})
    out["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version()}
    out["code"] = code_version()
    out["command"] = "python benchmarks/meteor_native_agreement.py" + (
        " --sets <one at a time>" if args.sets else "") + (f" --rows {args.rows}" if args.rows else "")
    out["note"] = "timings are incidental (taken on a shared, loaded machine); see meteor_native.json for speed"
    args.result.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:  # after every set, so an interrupted run keeps what it finished
        out["total"] = totals(out)
        args.result.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")

    with Meteor(backend="jar", workers=1) as jar:
        native = Meteor(backend="native")
        for name in names:
            c, r = sets[name]
            if args.rows:
                c, r = c[: args.rows], r[: args.rows]
            cands, refs = validate_corpus(c, r, allow_empty=True)
            tc, tr = tokenize_corpus(cands, refs, "ptb")
            out["sets"][name] = compare(jar, native, tc, tr, args.list)
            print(name, {k: v for k, v in out["sets"][name].items() if k != "differences"}, flush=True)
            save()
            if name in raw:
                out["raw_sets"][name] = compare(jar, native, list(cands), [list(x) for x in refs], args.list)
                print(name, "raw", {k: v for k, v in out["raw_sets"][name].items() if k != "differences"},
                      flush=True)
                save()
    save()
    print(json.dumps(out["total"]))


if __name__ == "__main__":
    main()
