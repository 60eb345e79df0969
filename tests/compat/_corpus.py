"""The two corpora the compat classes are compared on against pycocoevalcap 1.2.

* COCO: one where-image2 system on the 5,000 COCO Karpathy-test images with their 5 references
  (the shared data; ``capeval.data.load("tanti-coco")``).
* fuzz: captions drawn, with a fixed seed, from the fuzz targets' alphabet (tests/fuzz/targets.py:
  words in several scripts and cases, odd separators, punctuation, emoji, combining marks),
  without what capeval changes on purpose (line breaks other than ``\\n``, read as spaces) or
  what pycocoevalcap cannot take at all (lone surrogates: its tokenizer cannot encode them).
"""
from __future__ import annotations

import random

from capeval.validation import LINE_BREAKS
from tests.fuzz.targets import PUNCT, SEPARATORS, WORDS

from ._flow import coco_image_id


def coco_rows(data_dir, system: str = "merge_1", n: int | None = None):
    """``(image ids, references, candidates)`` of a where-image2 COCO system."""
    from capeval import data

    t = data.load("tanti-coco", root=data_dir)
    ids = [coco_image_id(name) for name in t.image_ids]
    cands = t.systems[system]
    n = len(ids) if n is None else n
    return ids[:n], [list(r) for r in t.references[:n]], list(cands[:n])


def _caption(rng: random.Random, newline: bool) -> str:
    seps = [s for s in SEPARATORS if not any(ch in LINE_BREAKS for ch in s)] + (["\n"] if newline else [])
    parts = []
    for _ in range(rng.randint(0, 9)):
        r = rng.random()
        parts.append(rng.choice(WORDS) if r < 0.55 else " " if r < 0.8 else rng.choice(seps) if r < 0.9
                     else rng.choice(PUNCT))
    return "".join(parts)


def fuzz_rows(n: int = 120, seed: int = 23, newline: bool = True):
    """``(image ids, references, candidates)``: ``n`` images, 1 to 5 references each."""
    rng = random.Random(seed)
    ids = rng.sample(range(1, 10**6), n)
    refs = [[_caption(rng, newline) for _ in range(rng.randint(1, 5))] for _ in range(n)]
    cands = [_caption(rng, newline) for _ in range(n)]
    return ids, refs, cands
