"""n-gram counting in the reference code's insertion order (BLEU smoothing variants)."""
from __future__ import annotations

from collections.abc import Sequence


def ngram_counts(words: Sequence[str], n: int) -> dict[tuple[str, ...], int]:
    """n-gram counts for orders 1..n in the reference code's insertion order
    (all unigrams left to right, then bigrams, ...). Order matters: CIDEr sums floats in it."""
    counts: dict[tuple[str, ...], int] = {}
    get = counts.get
    L = len(words)
    for k in range(1, n + 1):
        for i in range(L - k + 1):
            g = tuple(words[i : i + k])
            counts[g] = get(g, 0) + 1
    return counts
