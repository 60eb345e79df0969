"""The default ``learned`` model before and after its BERTScore features lost bert_score's padding
floor (docs/LEARNED.md, "Streaming").

Measures, for the model file of an earlier checkout (``--old``, e.g. ``git show
e53e5c6:src/capeval/learn/weights/learned-default.npz > old.npz``) and the shipped one:

* every Flickr8k-Expert score of both models (each with its own features) and their Kendall τ-c
  with the expert judgments;
* the nested leave-one-benchmark-out values of the minilm recipes with the current features,
  beside those recorded in ``benchmarks/results/learned_nested_minilm.json`` (computed with the
  floor).

    python benchmarks/learned_floor_change.py --old old.npz [--out benchmarks/results/learned_floor_change.json]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).with_name("results")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", type=Path, required=True, help="the default model file with the floor")
    ap.add_argument("--out", type=Path, default=RESULTS / "learned_floor_change.json")
    a = ap.parse_args(argv)

    import capeval
    import capeval.data
    from capeval.learn import lobo, recipes
    from capeval.learn.recipes import shipped_path
    from capeval.service.cache import ScoreCache
    from capeval.stats.correlation import kendall_tau_c

    table = capeval.data.load("flickr8k-expert")
    cands, refs = list(table.candidates), [list(r) for r in table.references]
    human = np.asarray(table.human, dtype=float)
    human = human if human.ndim == 1 else human.mean(axis=1)
    scores, seconds, taus = {}, {}, {}
    for name, path in (("old", a.old), ("new", shipped_path("default"))):
        t0 = time.process_time()
        res = capeval.score(cands, refs, metrics=["learned"], options={"learned": {"model": str(path)}})
        seconds[name] = round(time.process_time() - t0, 1)
        scores[name] = res.per_caption["learned"]
        taus[name] = kendall_tau_c(scores[name], human).value
    diff = np.abs(scores["old"] - scores["new"])

    cands_r = recipes.candidates("minilm")
    features = tuple(dict.fromkeys(recipes.all_features(cands_r)))
    blocks = lobo.load_blocks(recipes.sources(cands_r), features, cache=ScoreCache())
    records = lobo.nested_leave_one_out(blocks, features, cands_r, seed=0, n_resamples=200,
                                        compare_with=["sentsim_centroid"])
    before = json.loads((RESULTS / "learned_nested_minilm.json").read_text())["records"]
    nested = [{"held_out": r["held_out"], "statistic": r["statistic"], "recipe": r["models"]["nested"]["recipe"],
               "with_floor": b["models"]["nested"]["value"], "without_floor": r["models"]["nested"]["value"],
               "change": r["models"]["nested"]["value"] - b["models"]["nested"]["value"]}
              for r, b in zip(records, before)]
    out = {"flickr8k_expert": {"rows": len(diff), "rows_differing": int((diff > 0).sum()),
                               "max_abs_diff": float(diff.max()), "tau_c": taus, "cpu_seconds": seconds},
           "nested": nested}
    a.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
