"""Caption length ranges (words) of the data each shipped learned model was trained on, written to
``src/capeval/learn/weights/length_ranges.json`` (docs/LEARNED.md, "Inputs outside the training
range"). The shipped weights predate recording lengths, so they are measured here from the
benchmarks each model's ``trained_on`` names; models trained later record their own.

Usage: CAPEVAL_DATA=/work/shared/data python scripts/learned_length_ranges.py
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from capeval.data.loading import load_table
from capeval.learn.configs import default_model_path
from capeval.learn.model import LearnedModel
from capeval.learn.ranker_model import RankerModel
from capeval.learn.recipes import shipped_path

OUT = Path(__file__).resolve().parents[1] / "src" / "capeval" / "learn" / "weights" / "length_ranges.json"


def texts(name: str) -> tuple[list[str], list[str]]:
    t = load_table(name)
    if hasattr(t, "candidates_a"):
        cands = [*t.candidates_a, *t.candidates_b]
        refs = [r for rs in t.references for r in rs]
    elif hasattr(t, "systems"):
        cands = [c for caps in t.systems.values() for c in caps]
        refs = [r for rs in t.references for r in rs]
    else:
        cands = list(t.candidates)
        refs = [r for rs in (t.references or []) for r in rs]
    return cands, refs


def words(xs: list[str]) -> np.ndarray:
    return np.array([len(x.split()) for x in xs], dtype=np.int64)


def summary(xs: list[str]) -> dict:
    w = words(xs)
    # the model's range: from the shortest text to the 99.9th percentile (a few very long outliers,
    # such as one 215-word candidate, are not what the model learned from)
    return {"min": int(w.min()), "max": int(w.max()), "p99": float(np.percentile(w, 99)),
            "p999": float(np.percentile(w, 99.9)), "n": int(len(w))}


def main() -> None:
    models = {
        "learned-default": RankerModel.load(shipped_path("default")),
        "learned-mpnet": RankerModel.load(shipped_path("mpnet")),
        "nneval-default": LearnedModel.load(default_model_path()),
    }
    out = {}
    for key, m in models.items():
        cands: list[str] = []
        refs: list[str] = []
        for name in m.meta.get("trained_on", []):
            c, r = texts(name)
            cands += c
            refs += r
        if m.meta.get("training", {}).get("human"):
            # NNEval's training rows hold human captions as candidates too (its positive class)
            cands += refs
        out[key] = {"sha256": m.sha256, "trained_on": list(m.meta.get("trained_on", [])),
                    "words": "whitespace-separated", "candidates": summary(cands), "references": summary(refs)}
        print(key, out[key])
    OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
