"""Markdown tables for docs/LEARNED.md from leave-one-benchmark-out result files.

    python benchmarks/learned_tables.py benchmarks/results/learned_lobo.json [more.json ...]
    python benchmarks/learned_tables.py benchmarks/results/learned_nested_mpnet.json benchmarks/results/learned_nested_minilm.json

Each file is one ``benchmarks/learned_lobo.py`` run (one feature set); the tables put every run's
models beside the best single metric of each held-out benchmark.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

PERCENT = {"accuracy"}
SHORT = {"flickr8k-expert": "Expert", "flickr8k-cf": "CF", "composite": "COMPOSITE", "pascal50s": "PASCAL-50S",
         "abstract50s": "ABSTRACT-50S", "tanti-human200": "Tanti-200"}
RUN_NAMES = {"learned_lobo": "shipped recipe (15 features, with SPICE-py)",
             "learned_lobo_no_spice": "14 features, without SPICE-py (previous recipe)",
             "learned_lobo_other_kinds": "14 features without SPICE-py",
             "learned_lobo_with_length": "14 features + length", "learned_lobo_l2_1e-2": "14 features, L2 1e-2",
             "learned_nested_mpnet": "selected among MiniLM and mpnet recipes",
             "learned_nested_minilm": "selected among MiniLM-only recipes",
             "learned_nested_mpnet_no_distractors": "selected among MiniLM and mpnet recipes, without the "
                                                    "+distractors recipes"}
STAT = {"kendall_tau_c": "τc", "kendall_tau_b": "τb", "accuracy": "acc. %", "pearson": "r", "spearman": "ρ"}


def _fmt(stat: str, v: float, signed: bool = False) -> str:
    if stat in PERCENT:
        return f"{v:+.2f}" if signed else f"{v:.2f}"
    return f"{v:+.4f}" if signed else f"{v:.4f}"


def _delta(stat: str, d: float) -> str:
    # accuracies are stored in percent already; correlations as fractions
    return _fmt(stat, d, signed=True)


def chosen_on_training(records: list[dict]) -> dict[str, str]:
    """Per held-out benchmark, the single metric a user would pick without seeing it: the best
    mean rank over the *other* benchmarks (the learned model's training sets)."""
    ranks: dict[str, dict[str, int]] = {}
    for r in records:
        order = sorted(r["singles"], key=r["singles"].get, reverse=True)
        ranks[r["held_out"]] = {m: i for i, m in enumerate(order)}
    out = {}
    for r in records:
        others = [ranks[o["held_out"]] for o in records if o["held_out"] != r["held_out"]]
        common = [m for m in r["singles"] if all(m in rk for rk in others)]
        out[r["held_out"]] = min(common, key=lambda m: (sum(rk[m] for rk in others), m))
    return out


def headline_table(runs: list[tuple[str, dict]]) -> str:
    first = runs[0][1]["records"]
    cols = [r["held_out"] for r in first]
    head = "| model | " + " | ".join(f"{SHORT.get(c, c)} ({STAT.get(r['statistic'], r['statistic'])})"
                                     for c, r in zip(cols, first)) + " | wins vs best; vs chosen | mean Δ vs best |"
    lines = [head, "|---|" + "---:|" * (len(cols) + 2)]
    best = "| best single metric (on the held-out set) | " + " | ".join(
        f"{_fmt(r['statistic'], r['best_single_value'])} {r['best_single']}" for r in first) + " | | |"
    lines.append(best)
    chosen = chosen_on_training(first)
    lines.append("| single metric chosen on the other benchmarks (mean rank) | " + " | ".join(
        f"{_fmt(r['statistic'], r['singles'][chosen[r['held_out']]])} {chosen[r['held_out']]}" for r in first) + " | | |")
    if all("bertscore_f" in r["singles"] for r in first):
        lines.append("| bertscore_f (MiniLM) | " + " | ".join(
            _fmt(r["statistic"], r["singles"]["bertscore_f"]) for r in first) + " | | |")
    for run_name, run in runs:
        recs = {r["held_out"]: r for r in run["records"]}
        kinds = list(run["records"][0]["models"])
        for k in kinds:
            cells, wins, wins_chosen, deltas = [], 0, 0, []
            for c in cols:
                r = recs[c]
                m = r["models"][k]
                wins += m["delta_vs_best"] > 0
                d_chosen = m["value"] - r["singles"][chosen[c]]
                wins_chosen += d_chosen > 0
                # accuracies are in percent: put every delta on the correlation scale to average
                deltas.append(m["delta_vs_best"] / (100.0 if r["statistic"] in PERCENT else 1.0))
                cells.append(f"{_fmt(r['statistic'], m['value'])} ({_delta(r['statistic'], m['delta_vs_best'])}; "
                             f"{_delta(r['statistic'], d_chosen)})")
            lines.append(f"| {k}, {run_name} | " + " | ".join(cells) + f" | {wins}/{len(cols)}; {wins_chosen}/{len(cols)} | {sum(deltas) / len(deltas):+.4f} |")
    return "\n".join(lines)


def significance_table(run_name: str, run: dict, kind: str) -> str:
    lines = ["| held out | vs | Δ | paired bootstrap 95% CI | p | Williams t (Pearson), one-sided p |",
             "|---|---|---:|---|---:|---|"]
    for r in run["records"]:
        m = r["models"][kind]
        rows = [(r["best_single"], m["delta_vs_best"], m["vs_best"])]
        rows += [(name, v["delta"], v) for name, v in m.get("vs", {}).items() if name != r["best_single"]]
        for name, d, v in rows:
            lo, hi = v["bootstrap_ci"]
            w = (f"t = {v['williams_t']:.2f}, p = {v['williams_p_one_sided']:.3g}" if "williams_t" in v else "—")
            lines.append(f"| {SHORT.get(r['held_out'], r['held_out'])} | {name} | {_delta(r['statistic'], d)} | "
                         f"[{lo:+.4g}, {hi:+.4g}] | {v['bootstrap_p']:.3g} | {w} |")
    return f"**{kind}, {run_name}**\n\n" + "\n".join(lines)


def nested_table(runs: list[tuple[str, dict]]) -> str:
    """Nested runs (benchmarks/learned_nested.py): per held-out benchmark the recipe chosen
    without it, its number, Δ vs the best single metric (any family) and the bootstrap p."""
    first = runs[0][1]["records"]
    cols = [r["held_out"] for r in first]
    lines = ["| | " + " | ".join(f"{SHORT.get(c, c)} ({STAT.get(r['statistic'], r['statistic'])})"
                                  for c, r in zip(cols, first)) + " | wins | mean Δ |",
             "|---|" + "---:|" * (len(cols) + 2),
             "| best single metric (on the held-out set) | " + " | ".join(
                 f"{_fmt(r['statistic'], r['best_single_value'])} {r['best_single']}" for r in first) + " | | |"]
    for run_name, run in runs:
        recs = {r["held_out"]: r for r in run["records"]}
        cells, recipes, wins, deltas = [], [], 0, []
        for c in cols:
            r = recs[c]
            m = r["models"]["nested"]
            wins += m["delta_vs_best"] > 0
            deltas.append(m["delta_vs_best"] / (100.0 if r["statistic"] in PERCENT else 1.0))
            cells.append(f"{_fmt(r['statistic'], m['value'])} ({_delta(r['statistic'], m['delta_vs_best'])}; "
                         f"p = {m['vs_best']['bootstrap_p']:.2g})")
            recipes.append(f"`{m['recipe']}`")
        lines.append(f"| {run_name} | " + " | ".join(cells) + f" | {wins}/{len(cols)} | {sum(deltas) / len(deltas):+.4f} |")
        lines.append(f"| {run_name}: recipe chosen | " + " | ".join(recipes) + " | | |")
    return "\n".join(lines)


def main(argv=None) -> None:
    paths = [Path(p) for p in (argv if argv is not None else sys.argv[1:])]
    runs = [(RUN_NAMES.get(p.stem, p.stem), json.loads(p.read_text())) for p in paths]
    if "inner_selection" in runs[0][1]["records"][0]:
        print(nested_table(runs))
        for name, run in runs:
            print()
            print(significance_table(name, run, "nested"))
        return
    print(headline_table(runs))
    print()
    name, run = runs[0]
    kind = next(iter(run["records"][0]["models"]))
    print(significance_table(name, run, kind))


if __name__ == "__main__":
    main()
