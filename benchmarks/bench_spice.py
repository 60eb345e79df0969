"""spice_py_spacy (capeval's SPICE approximation) on the two SPICE acceptance tables.

* Flickr8k-Expert, CLIPScore protocol (PROTOCOLS.md §14.2): 16,992 rows from
  clipscore_format_EXPERT/flickr8k.json, one metric call over all rows, 100 x Kendall tau-c of the
  per-row score (SPICE's All.f) against the expert ratings. Target: original SPICE 44.9.
* PASCAL-50S (§14.5): EXPERT_processed/pascal_50s.json, 5 references, both members of all 4,000
  pairs in one call (8,000 units), metric ties get 0.5 credit. Target: SPICE's published
  HC/HI/HM/MM 63.6/96.3/86.7/68.3, mean 78.7 (CLIPScore Table 4).

Text is whitespace-normalised and PTB-tokenized by pycocoevalcap's PTBTokenizer (the input the
SPICE wrapper sees). The original spice-1.0.jar runs side by side when Stanford CoreNLP 3.6.0 is
available in $CAPEVAL_CORENLP_DIR (it is not on our machines); the published numbers are the
reference otherwise.

    python benchmarks/bench_spice.py [--no-synonyms] [--n-process 1]

Writes benchmarks/results/spice.json.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TARGETS = {"expert_tau_c": 44.9, "HC": 63.6, "HI": 96.3, "HM": 86.7, "MM": 68.3, "pascal_mean": 78.7}
TARGET_SOURCE = "CLIPScore (Hessel et al., EMNLP 2021) Tables 1 and 4, SPICE rows"


def norm(text: str) -> str:
    return " ".join(text.split())


def load_expert(root: Path):
    import capeval.data

    table = capeval.data.load("flickr8k-expert", root)  # whitespace-normalised rows, file order
    return table.candidates, table.references, table.human


def load_pascal(root: Path):
    data = json.loads((root / "pascal50s" / "EXPERT_processed" / "pascal_50s.json").read_text())
    cats, pairs, refs, labels = [], [], [], []
    for cat in ("HC", "HI", "HM", "MM"):
        for item in data[cat]:
            cats.append(cat)
            pairs.append([norm(c) for c in item["captions"]])
            refs.append([norm(r) for r in item["references"]])
            labels.append(int(item["label"]))
    return cats, pairs, refs, np.asarray(labels)


def ptb(texts: list[str]) -> dict[str, str]:
    """pycocoevalcap's PTBTokenizer over the distinct strings."""
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    uniq = list(dict.fromkeys(texts))
    out = PTBTokenizer().tokenize({i: [{"caption": t}] for i, t in enumerate(uniq)})
    return {t: out[i][0] for i, t in enumerate(uniq)}


def pairwise(cats, labels, a, b) -> dict[str, float]:
    acc, ties = {}, {}
    cats = np.asarray(cats)
    for cat in ("HC", "HI", "HM", "MM"):
        m = cats == cat
        sa, sb, lab = a[m], b[m], labels[m]
        credit = np.where(sa == sb, 0.5, ((sa < sb).astype(int) == lab).astype(float))
        acc[cat] = 100.0 * float(credit.mean())
        ties[cat] = int((sa == sb).sum())
    acc["pascal_mean"] = float(np.mean([acc[c] for c in ("HC", "HI", "HM", "MM")]))
    return acc, ties


def score(backend: str, cands, refs, synonyms: bool, n_process: int):
    import capeval

    opts = {"backend": backend, "synonyms": synonyms}
    if backend == "py":
        opts["n_process"] = n_process
    t0 = time.perf_counter()
    res = capeval.score(cands, refs, metrics=["spice"], tokenizer="none", options={"spice": opts})
    return res, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-synonyms", action="store_true")
    ap.add_argument("--n-process", type=int, default=1)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "spice.json")
    args = ap.parse_args()
    from scipy.stats import kendalltau

    from capeval.paths import data_root
    from capeval.scenegraph.jar import corenlp_dir

    root = data_root(required=True)
    e_c, e_r, ratings = load_expert(root)
    p_cat, p_pairs, p_refs, p_lab = load_pascal(root)
    t0 = time.perf_counter()
    tok = ptb(e_c + [r for rs in e_r for r in rs] + [c for p in p_pairs for c in p]
              + [r for rs in p_refs for r in rs])
    tok_s = time.perf_counter() - t0
    e_c = [tok[c] for c in e_c]
    e_r = [[tok[r] for r in rs] for rs in e_r]
    pc = [tok[c] for p in p_pairs for c in p]
    pr = [[tok[r] for r in rs] for rs in p_refs for _ in (0, 1)]

    backends = ["py"]
    try:
        corenlp_dir()
        backends.append("jar")
    except Exception as exc:  # noqa: BLE001 - recorded in the results
        jar_note = f"jar backend not run: {exc}"
    else:
        jar_note = "jar backend run"

    results: dict = {
        "benchmark": "spice",
        "targets": TARGETS,
        "target_source": TARGET_SOURCE,
        "protocol": {"expert": "PROTOCOLS.md §14.2, 16,992 rows, 100*tau_c",
                     "pascal": "PROTOCOLS.md §14.5, EXPERT_processed labels, 5 refs, ties 0.5"},
        "tokenizer": "pycocoevalcap PTBTokenizer (Java)",
        "tokenize_seconds": round(tok_s, 2),
        "synonyms": not args.no_synonyms,
        "jar": jar_note,
        "machine": {"python": sys.version.split()[0], "platform": platform.platform()},
        "backends": {},
    }
    per_row = {}
    for backend in backends:
        res_e, secs_e = score(backend, e_c, e_r, not args.no_synonyms, args.n_process)
        stats_e = dict(res_e.details.get("spice", {}).get("stats", {}))
        res_p, secs_p = score(backend, pc, pr, not args.no_synonyms, args.n_process)
        s = res_e.per_caption["spice"]
        per_row[backend] = s
        acc, ties = pairwise(p_cat, p_lab, res_p.per_caption["spice"][0::2], res_p.per_caption["spice"][1::2])
        row = {
            "signature": res_e.signatures["spice"],
            "expert_tau_c": 100.0 * float(kendalltau(s, ratings, variant="c")[0]),
            "expert_tau_b": 100.0 * float(kendalltau(s, ratings, variant="b")[0]),
            "expert_corpus_spice": res_e.corpus["spice"],
            **acc,
            "pascal_ties": ties,
            "expert_seconds": round(secs_e, 2),
            "pascal_seconds": round(secs_p, 2),
            "expert_rows_per_s": round(len(e_c) / secs_e, 1),
        }
        if stats_e:
            row["expert_parse"] = {k: round(v, 2) for k, v in stats_e.items()}
        row["gap_to_target"] = {k: round(row[k] - v, 2) for k, v in TARGETS.items()}
        results["backends"][backend] = row
        print(json.dumps({k: v for k, v in row.items() if k != "signature"}, indent=1))
    if "jar" in per_row:
        from scipy.stats import pearsonr

        results["py_vs_jar_pearson"] = float(pearsonr(per_row["py"], per_row["jar"])[0])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
