"""Seeded rows for the streaming tests: unique captions, references shared by some rows,
varying reference counts, punctuation for the tokenizer."""
from __future__ import annotations

import json
import random

WORDS = ("a man dog woman cat two people red blue small large sitting standing running on in with "
         "the near of at street grass table beach bike horse ball white black young old field").split()


def make_rows(n: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)

    def sent() -> str:
        s = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 11)))
        return s.capitalize() + rng.choice([".", "", " .", "!"])

    shared = [[sent() for _ in range(rng.randint(1, 5))] for _ in range(max(1, n // 7))]
    rows = []
    for i in range(n):
        refs = rng.choice(shared) if rng.random() < 0.3 else [sent() for _ in range(rng.randint(1, 5))]
        rows.append({"id": f"r{i}", "candidate": sent(), "references": list(refs)})
    return rows


def write_jsonl(path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def assert_same_result(mem, got, names) -> None:
    """A streamed Result equals the in-memory one: row count, corpus values, per-caption arrays
    (NaN where NaN) and signatures of ``names``."""
    import numpy as np

    assert got.n == mem.n
    for m in names:
        assert got.corpus[m] == mem.corpus[m], m
        assert np.array_equal(got.per_caption[m], mem.per_caption[m], equal_nan=True), m
        assert got.signatures[m] == mem.signatures[m], m
