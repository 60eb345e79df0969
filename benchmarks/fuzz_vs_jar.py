"""Differential fuzz of capeval against pycocoevalcap 1.2 and its jars, token by token and score
by score.

    nice -n 19 python benchmarks/fuzz_vs_jar.py [--rows 20000] [--batch 500] [--seed 1]

Rows (one candidate, 1-6 references) come from seven generators: ``hostile`` draws characters and
fragments from the alphabet of issue 36 (punctuation, emoji, combining marks, zero-width space,
tabs, ligatures, CJK, clitics, abbreviations); ``grammar`` builds caption-like sentences around
the PTB lexer's special cases (abbreviations, acronyms and one-letter initials, decimals and
other numbers, contractions, quotes, brackets, ellipses, dashes, entities, URLs, smileys, and
sentence-final periods after each of them, within a line and before a next caption starting
with a capitalised sentence word); ``dense`` glues all those pieces, punctuation and the caseless
look-alikes of ASCII letters together at random; ``codepoint`` puts code points from anywhere
(the BMP, the astral planes, a list of notable ones) into 36 contexts; ``entity`` writes HTML
entities in any capitalisation inside words, clitics and tags; ``url`` builds URLs, domains
and e-mail addresses of odd characters; ``long`` writes 100-500-word descriptions whose
sentences often end on an abbreviation, an initial or a number. ``--sweep`` adds every code
point in 14 contexts (tokens only). Each batch of rows is one pycocoevalcap evaluation:

- tokens: the Java PTBTokenizer on the references and on the candidates (two jar runs, as the
  wrapper does) against ``capeval.text.ptb.tokenize_lines`` on the same batches, per caption;
  captions whose per-caption tokens (``ptb.tokenize``, what ``capeval.score`` uses) differ from
  the batch's only because of the next line are counted apart (docs/TOKENIZER.md);
- scores: pycocoevalcap's Bleu(4), Rouge(), Cider() and Meteor() on the jar's tokens against
  ``capeval.score`` (native METEOR) on capeval's, per caption and for the batch (``==``).

METEOR is ``==`` too: native METEOR takes the JVM's ``Math.pow`` (HotSpot's x86_64 intrinsic,
one unit in the last place off the C library's ``pow`` for a few arguments) from its generated
table (docs/METRICS.md). A METEOR difference's example holds the jar's and capeval's statistics
lines and the fragmentation's power as the JVM and capeval compute it.

Writes benchmarks/results/fuzz_vs_jar.json (counts, and up to 20 examples of each kind).
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from tests.fuzz.jar_diff import (  # noqa: E402
    GENERATORS,
    compare_tokens,
    issue_rows,
    new_report,
    quiet,
    run_batch,
    sweep_code_points,
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20000, help="Generated rows (an equal share per generator).")
    ap.add_argument("--batch", type=int, default=500, help="Rows per pycocoevalcap evaluation.")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-issue-corpus", action="store_true", help="Skip issue 36's seed-1 corpus.")
    ap.add_argument("--sweep", action="store_true",
                    help="Also every BMP code point (and a sample of the astral planes) in 14 contexts, tokens only.")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "fuzz_vs_jar.json")
    a = ap.parse_args(argv)

    from pycocoevalcap.meteor.meteor import Meteor

    import capeval

    t0 = time.time()
    with quiet():
        meteor = Meteor()
    result: dict = {
        "capeval": capeval.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "java": subprocess.run(["java", "-version"], check=False, capture_output=True, text=True).stderr.splitlines()[0],
        "seed": a.seed, "batch_rows": a.batch,
    }
    if not a.no_issue_corpus:
        rep = new_report()
        rows = issue_rows(1)
        run_batch(rows, meteor, rep, "issue36-seed1")
        rep["rows"] = len(rows)
        result["issue36_seed1"] = rep
    if a.sweep:
        rep = new_report()
        compare_tokens(sweep_code_points(1), rep, "sweep")
        result["code_point_sweep"] = rep
    # The generators take turns batch by batch, and the results are rewritten after every batch
    # ("complete": false until the last), so an interrupted run still records what it compared.
    names = list(GENERATORS)
    rngs = {name: random.Random(a.seed * 1000 + g) for g, name in enumerate(names)}
    totals = {name: new_report() for name in names}
    left = {name: a.rows // len(names) for name in names}
    result["generated"] = totals
    a.out.parent.mkdir(parents=True, exist_ok=True)
    b = 0
    while any(left.values()):
        name = names[b % len(names)]
        b += 1
        if not left[name]:
            continue
        rep = totals[name]
        rows = [GENERATORS[name](rngs[name]) for _ in range(min(a.batch, left[name]))]
        run_batch(rows, meteor, rep, f"{name}-{rep['rows'] // a.batch}")
        rep["rows"] += len(rows)
        left[name] -= len(rows)
        print(f"{name}: {rep['rows']} rows, {rep['token_differences']} token / "
              f"{sum(rep['score_differences'].values())} score differences", file=sys.stderr, flush=True)
        result["generated_rows"] = sum(r["rows"] for r in totals.values())
        result["complete"] = not any(left.values())
        result["seconds"] = round(time.time() - t0, 1)
        a.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "generated"}, ensure_ascii=False)[:2000])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
