"""The §5 tables of docs/NNEVAL.md, rendered from benchmarks/results/nneval.json.

    python benchmarks/nneval_acceptance.py        # measure → benchmarks/results/nneval.json
    python benchmarks/nneval_tables.py            # print the markdown tables (and their signatures)
    python benchmarks/nneval_tables.py --check docs/NNEVAL.md   # exit 1 unless the doc holds them verbatim

Pure formatting: every cell is a value of the json, rounded; nothing is measured here. The row
order and the tested models come from nneval_acceptance.py, so the two cannot drift apart.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from capeval.errors import InputError
from nneval_acceptance import BENCHMARKS, FEATURES, TESTED, VARIANTS

HERE = Path(__file__).resolve().parent
LABELS = {"wmd": "wmd (norm, GloVe-50d)", "spice": "spice (spaCy approx.)"}
ROWS = (*FEATURES, *VARIANTS)
PAPER_ROWS = (*FEATURES, "before", "paper", "per-ref+clip+mono", "shipped", "shipped-split")  # "Next to the paper"
NOT_CATEGORIES = {"mean", "worst", "ties", "clipped_fraction"}  # pairwise row keys that are not categories
PASCAL_CATEGORIES = ("HC", "HI", "HM", "MM")


def _get(d: dict, *keys):
    """d[k1][k2]…, or an InputError naming the missing path (a partial or older json)."""
    for i, k in enumerate(keys):
        if not isinstance(d, dict) or k not in d:
            raise InputError(f"nneval.json has no {'/'.join(map(str, keys[:i + 1]))}; "
                             "rerun python benchmarks/nneval_acceptance.py")
        d = d[k]
    return d


def _row(res: dict, bench: str, row: str) -> dict:
    return _get(res, "benchmarks", bench, "rows", row)


def _label(row: str) -> str:
    return LABELS.get(row, row)


def _categories(res: dict, bench: str) -> list[str]:
    """Category columns of a pairwise benchmark in json order; every row must have the same ones."""
    first = [k for k in _row(res, bench, ROWS[0]) if k not in NOT_CATEGORIES]
    for row in ROWS:
        cats = [k for k in _row(res, bench, row) if k not in NOT_CATEGORIES]
        if cats != first:
            raise InputError(f"nneval.json {bench}: row {row!r} has categories {cats}, {ROWS[0]!r} has {first}")
    return first


def _table(header: list[str], align: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _acc(x: float) -> str:
    return f"{x:.1f}"


def _corr(x: float) -> str:
    return f"{x:.3f}"


def headline(res: dict) -> str:
    cats = _categories(res, "distractors")
    rows = []
    for row in ROWS:
        d = _row(res, "distractors", row)
        worst = min(cats, key=lambda c: d[c])
        clipped = [_row(res, b, row).get("clipped_fraction") for b in BENCHMARKS]
        if any(c is None for c in clipped) and any(c is not None for c in clipped):
            raise InputError(f"nneval.json: row {row!r} has a clipped fraction on some benchmarks only")
        rows.append([
            _label(row), _acc(_row(res, "abstract50s", row)["mean"]), _acc(d["mean"]), f"{_acc(d[worst])} ({worst})",
            _acc(_row(res, "pascal50s", row)["mean"]), _corr(_row(res, "composite", row)["kendall_tau_c"]),
            _corr(_row(res, "flickr8k-expert", row)["kendall_tau_c"]),
            _corr(_row(res, "flickr8k-cf", row)["kendall_tau_b"]),
            "" if clipped[0] is None else f"{100 * max(clipped):.2f}%"])
    header = ["row", "ABSTRACT-50S mean", "distractors mean", "distractors worst task", "PASCAL-50S mean",
              "COMPOSITE τ-c", "Flickr8k-Expert τ-c", "Flickr8k-CF τ-b", "clipped (max over benchmarks)"]
    return _table(header, ["---"] + ["---:"] * 8, rows)


def distractors(res: dict) -> str:
    cats = _categories(res, "distractors")
    rows = [[_label(r)] + [_acc(_row(res, "distractors", r)[c]) for c in [*cats, "mean"]] for r in ROWS]
    return _table(["row", *cats, "mean"], ["---"] + ["---:"] * (len(cats) + 1), rows)


def next_to_paper(res: dict) -> str:
    pascal = _categories(res, "pascal50s")
    if tuple(pascal) != PASCAL_CATEGORIES:
        raise InputError(f"nneval.json pascal50s categories are {pascal}, expected {list(PASCAL_CATEGORIES)}")
    abstract = _categories(res, "abstract50s")
    paper = _get(res, "paper")
    pc, pp = _get(paper, "composite"), _get(paper, "pascal50s")
    rows = [["**NNEval, paper**", *(_corr(pc[s]) for s in ("pearson", "spearman", "kendall_tau_c")),
             *(_acc(pp[c]) for c in pascal), _acc(sum(pp[c] for c in pascal) / len(pascal)),
             *("—" for _ in abstract)]]
    for row in PAPER_ROWS:
        c, p, a = (_row(res, b, row) for b in ("composite", "pascal50s", "abstract50s"))
        rows.append([_label(row), *(_corr(c[s]) for s in ("pearson", "spearman", "kendall_tau_c")),
                     *(_acc(p[k]) for k in [*pascal, "mean"]), *(_acc(a[k]) for k in abstract)])
    header = ["row", "COMPOSITE Pearson", "Spearman", "τ-c", f"PASCAL {pascal[0]}", *pascal[1:], "mean",
              f"ABSTRACT {abstract[0]}", *abstract[1:]]
    return _table(header, ["---"] + ["---:"] * (len(header) - 1), rows)


def _signed(x: float, digits: int) -> str:
    return f"{x:+.{digits}f}"


def significance(res: dict) -> str:
    rows = []
    for bench in BENCHMARKS:
        for name in TESTED:
            t = _get(res, "benchmarks", bench, "tests", name)
            boot = [k for k in t if k.startswith("paired_bootstrap_")]
            if len(boot) != 1:
                raise InputError(f"nneval.json {bench}/tests/{name}: expected one paired_bootstrap_* entry, got {boot}")
            b = t[boot[0]]
            stat = boot[0].removeprefix("paired_bootstrap_")
            if stat == "mean_acc":
                delta = f"Δacc {_signed(b['delta'], 2)} [{_signed(b['low'], 2)}, {_signed(b['high'], 2)}]"
            else:
                sym = {"kendall_tau_c": "τ-c", "kendall_tau_b": "τ-b"}.get(stat, stat)
                delta = f"Δ{sym} {_signed(b['delta'], 4)} [{_signed(b['low'], 4)}, {_signed(b['high'], 4)}]"
            w = t.get("williams_pearson")
            williams = "—" if w is None else (f"r {w['r_model']:.3f} vs {w['r_feature']:.3f}, "
                                              f"t = {w['t']:.2f}, p = {w['p']:.3f}")
            rows.append([bench, f"{name} vs {t['vs']}", williams, f"{delta}, p = {b['p']:.3f}"])
    header = ["benchmark", "model vs best feature", "Williams (Pearson, one-sided)", "paired bootstrap Δ [95% CI], p"]
    return _table(header, ["---"] * 4, rows)


def signatures(res: dict) -> str:
    """The protocol signature of each benchmark and of each bootstrap kind, and every model's sha256."""
    lines = [f"- `{bench}`: `{_get(res, 'benchmarks', bench, 'signature')}`" for bench in BENCHMARKS]
    boots = {}
    for bench in BENCHMARKS:
        for name in TESTED:
            for k, v in _get(res, "benchmarks", bench, "tests", name).items():
                if k.startswith("paired_bootstrap_"):
                    boots.setdefault(v["signature"], None)
    lines += [f"- bootstrap: `{s}`" for s in boots]
    lines += [f"- model `{name}`: sha256 `{_get(res, 'models', name, 'sha256')[:12]}…`" for name in VARIANTS]
    return "\n".join(lines)


SECTIONS = {
    "Headline numbers": headline,
    "Distractor tasks": distractors,
    "Next to the paper": next_to_paper,
    "Significance against the best input feature": significance,
    "Signatures": signatures,
}


def render(res: dict) -> dict[str, str]:
    return {title: fn(res) for title, fn in SECTIONS.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=HERE / "results" / "nneval.json")
    ap.add_argument("--check", type=Path, metavar="DOC", help="exit 1 unless DOC contains every block verbatim")
    args = ap.parse_args(argv)
    try:
        res = json.loads(args.json.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise InputError(f"cannot read {args.json}: {e}") from e
    blocks = render(res)
    if args.check:
        doc = args.check.read_text()
        stale = [title for title, text in blocks.items() if text not in doc]
        for title in stale:
            print(f"{args.check}: the {title!r} block differs from {args.json}", file=sys.stderr)
        return 1 if stale else 0
    print("\n\n".join(f"<!-- {title} -->\n{text}" for title, text in blocks.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
