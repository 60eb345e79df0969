"""Question/answer tables of the 20 hand-picked captions (tests/qace/cases.py) as Markdown,
for docs/QACE.md.

    python benchmarks/qace_examples.py > /tmp/qace_examples.md
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "qace"))


def main() -> None:
    import capeval
    from cases import CASES

    res = capeval.score([c[1] for c in CASES], [c[2] for c in CASES], ["qace_ref"])
    print(f"Signature: `{res.signatures['qace_ref']}`\n")
    seen_refs: set[int] = set()
    for (category, cand, refs, wrong), exp in zip(CASES, res.explanations["qace_ref"]):
        if id(refs) not in seen_refs:
            seen_refs.add(id(refs))
            print("References: " + " / ".join(f"(r{i + 1}) {r}" for i, r in enumerate(refs)) + "\n")
        flagged = ", ".join(f"`{r.candidate_answer}`" for r in exp.flagged()) or "nothing"
        print(f"**{category}** - *{cand}* - QACE-Ref {exp.scores['qace']:.3f}; flagged: {flagged}"
              + (f" (wrong word: `{wrong}`)" if wrong else "") + "\n")
        print("| question | candidate | " + " | ".join(f"r{i + 1}" for i in range(len(refs))) + " | agreement | |")
        print("|---|---|" + "---|" * len(refs) + "---|---|")
        for r in exp.rows:
            cells = [f"{a or '∅'} ({f:.2f}/{b:.2f})" for a, f, b in zip(r.answers, r.f1, r.bertscore)]
            print(f"| {r.question} | {r.candidate_answer} | " + " | ".join(cells)
                  + f" | {r.support:.2f} | {'**flag**' if r.flagged else ''} |")
        print()


if __name__ == "__main__":
    main()
