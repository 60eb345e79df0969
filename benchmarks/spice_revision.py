"""spice_py_spacy revisions side by side: ties, zeros and headline numbers on the SPICE tables.

Runs ``capeval bench`` (cache on) for composite, pascal50s and flickr8k-expert with the
``spice`` output (plus the category outputs when the installed capeval can benchmark them) and
stores the numbers under a label in benchmarks/results/spice_revisions.json, next to the
labels of earlier runs. ``markdown()`` renders the comparison for docs (bench_all.py puts it
in docs/REPRODUCTION.md; docs/SPICE.md quotes it).

    python benchmarks/spice_revision.py --label rev2
    # an older revision, from a checkout of that commit:
    git worktree add --detach /tmp/rev1 03f1034
    PYTHONPATH=/tmp/rev1/src python benchmarks/spice_revision.py --label rev1 --metrics spice
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "spice_revisions.json"
CATEGORIES = ("spice_object", "spice_attribute", "spice_relation", "spice_color", "spice_count", "spice_size")
BENCHMARKS = ("composite", "pascal50s", "flickr8k-expert")


def measure(metrics: list[str], root=None) -> dict:
    from capeval.metaeval.runner import run_benchmark

    out: dict = {}
    for name in BENCHMARKS:
        res = run_benchmark(name, metrics, root=root)
        entry: dict = {"signatures": dict(res.metric_signatures), "metrics": {}}
        for m in metrics:
            scores = np.asarray(res.scores[m], dtype=float)
            row: dict = {"zeros": int((scores == 0).sum()), "nan": int(np.isnan(scores).sum()),
                         "units": int(scores.size)}
            if res.kind == "correlation":
                cors = res.experiment.results[m]
                row.update(tau_c=cors["kendall_tau_c"].value, tau_b=cors["kendall_tau_b"].value,
                           n=cors["kendall_tau_c"].n)
            else:
                acc = res.experiment.results[m]
                row.update(accuracy=acc.percent(), ties=dict(acc.ties), n=dict(acc.n))
                half = len(scores) // 2
                a, b = scores[:half], scores[half:]
                row["ties_both_zero"] = int(((a == 0) & (b == 0)).sum())
            entry["metrics"][m] = row
        out[name] = entry
    return out


def markdown(path: Path = RESULTS) -> str:
    """Before/after table of the ``spice`` output for every stored label."""
    data = json.loads(Path(path).read_text())
    L = ["| revision | PASCAL-50S HC / HI / HM / MM | mean | tied pairs (both 0) | Expert τc | Expert τb "
         "| Expert rows at 0 | COMPOSITE τc |",
         "|---|---|---:|---:|---:|---:|---:|---:|"]
    for label, run in data.items():
        p = run["pascal50s"]["metrics"]["spice"]
        e = run["flickr8k-expert"]["metrics"]["spice"]
        c = run["composite"]["metrics"]["spice"]
        acc = p["accuracy"]
        L.append(f"| {label} | {acc['HC']:.2f} / {acc['HI']:.2f} / {acc['HM']:.2f} / {acc['MM']:.2f} "
                 f"| {acc['mean']:.2f} | {sum(p['ties'].values())} ({p['ties_both_zero']}) "
                 f"| {100 * e['tau_c']:.2f} | {100 * e['tau_b']:.2f} | {e['zeros']} of {e['units']} "
                 f"| {100 * c['tau_c']:.2f} |")
    sigs = {label: run["pascal50s"]["signatures"]["spice"] for label, run in data.items()}
    L.append("")
    L.extend(f"- `{label}`: `{sig}`" for label, sig in sigs.items())
    last = list(data.values())[-1]
    if any(m in last["pascal50s"]["metrics"] for m in CATEGORIES):
        L += ["", f"Category outputs ({list(data)[-1]}; rows/pairs whose references have no tuple of the "
              "category are skipped, `undef:skip|defined:K/N`):", "",
              "| output | Expert τc (rows) | COMPOSITE τc (rows) | PASCAL-50S mean (pairs) |",
              "|---|---:|---:|---:|"]
        for m in CATEGORIES:
            e = last["flickr8k-expert"]["metrics"][m]
            c = last["composite"]["metrics"][m]
            p = last["pascal50s"]["metrics"][m]
            L.append(f"| {m} | {100 * e['tau_c']:.2f} ({e['n']}) | {100 * c['tau_c']:.2f} ({c['n']}) "
                     f"| {p['accuracy']['mean']:.2f} ({sum(p['n'].values())}) |")
    return "\n".join(L) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", required=True)
    ap.add_argument("--metrics", default=",".join(("spice",) + CATEGORIES))
    ap.add_argument("--root", default=None)
    ap.add_argument("--results", default=str(RESULTS))
    args = ap.parse_args(argv)
    path = Path(args.results)
    data = json.loads(path.read_text()) if path.exists() else {}
    data[args.label] = measure([m.strip() for m in args.metrics.split(",") if m.strip()], args.root)
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    print(markdown(path))


if __name__ == "__main__":
    main()
