"""JSONL row fragments are the bytes of ``json.dumps`` of each row's object, whichever way
``rowfiles.fragment`` builds them (one format string per row, or json.dumps per row)."""
from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from capeval.rowfiles import fragment

VALUES = np.array([0.0, -0.0, 5e-324, 1e-300, 1 / 3, 0.1, 1e16, 1e-5, 123456789.0, 2.5e300, 0.7071067811865476])
ALPHABET = 'ab"\\\n\t\x00\x1f\x7f\u2028\u00e9\u4e2d\U0001F600 %s'


def _expected(ids, per_caption) -> bytes:
    def clean(x: float):
        return x if math.isfinite(x) else None if math.isnan(x) else ("inf" if x > 0 else "-inf")

    lines = [json.dumps({"id": key, **{m: clean(float(v[i])) for m, v in per_caption.items()}}, ensure_ascii=False)
             for i, key in enumerate(ids)]
    return ("\n".join(lines) + "\n").encode("utf-8")


@pytest.mark.parametrize("kind", ["str", "int", "mixed"])
def test_jsonl_fragment_is_json_dumps_per_row(kind):
    rng = np.random.default_rng(3)
    r = random.Random(3)
    for trial in range(40):
        n = r.randint(1, 200)
        strs = ["".join(r.choice(ALPHABET) for _ in range(r.randint(0, 9))) for _ in range(n)]
        ints = [r.randint(-10**20, 10**20) for _ in range(n)]
        ids = strs if kind == "str" else ints if kind == "int" else [r.choice([s, i]) for s, i in zip(strs, ints)]
        names = ["bleu4", "rouge_l", "cider_d", 'odd "%s" name', "\u00e9"][: r.randint(0, 5)]
        per_caption = {m: np.concatenate([rng.random(n // 2), rng.choice(VALUES, size=n - n // 2)]) for m in names}
        if trial % 4 == 3 and names:  # non-finite scores are written as null / "inf"
            per_caption[names[0]][: min(n, 3)] = [math.nan, math.inf, -math.inf][: min(n, 3)]
        assert fragment("jsonl", ids, per_caption) == _expected(ids, per_caption), trial


def test_jsonl_fragment_edge_cases():
    assert fragment("jsonl", [], {"bleu4": np.zeros(0)}) == b""
    # a score named "id" replaces the id in json.dumps's object: the bytes stay json.dumps's
    pc = {"id": np.array([0.5]), "bleu4": np.array([0.25])}
    assert fragment("jsonl", ["x"], pc) == _expected(["x"], pc) == b'{"id": 0.5, "bleu4": 0.25}\n'
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate cannot be written as UTF-8, either way
        fragment("jsonl", ["\ud800"], {"bleu4": np.array([0.5])})
