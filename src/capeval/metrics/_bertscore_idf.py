"""BERTScore's idf as bert_score computes it, in a form that merges: reference-document counts
per token id and the number of reference documents (the corpus pre-pass state of a streamed
run, :class:`IdfCounts`), and the weights from them.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


def reference_df(ref_ids: Sequence[Sequence[int]], ref_counts: Sequence[int]) -> dict[int, int]:
    """df(t): in how many reference documents of the flattened list token id t occurs.

    ``ref_ids[k]`` are the ids of distinct reference k and ``ref_counts[k]`` how many times it
    occurs in the flattened list (bert_score counts every occurrence: a reference shared by
    three rows counts three times; a token repeated within one reference counts once).
    """
    df: Counter = Counter()
    for ids, count in zip(ref_ids, ref_counts):
        for t in set(ids):
            df[t] += count
    return dict(df)


def idf_from_counts(df: dict[int, int], m: int) -> tuple[dict[int, float], float]:
    """``(idf, unseen)``: idf(t) = ln((M+1)/(df(t)+1)), M reference documents; unseen tokens
    get ln(M+1). A function of the integer counts alone, so counts summed over chunks give
    the same floats as counts of the whole input."""
    return {t: math.log((m + 1) / (c + 1)) for t, c in df.items()}, math.log(m + 1)


def idf_table(ref_ids: Sequence[Sequence[int]], ref_counts: Sequence[int]) -> tuple[dict[int, float], float]:
    """``(idf, unseen)`` over the flattened reference list (:func:`reference_df`, M its length)."""
    return idf_from_counts(reference_df(ref_ids, ref_counts), int(sum(ref_counts)))


@dataclass(frozen=True)
class IdfCounts:
    """BERTScore's idf pre-pass state (``Metric.prepass``): reference-document counts per token
    id of ``encoder``'s tokenizer and the number of reference documents ``m``, both over the
    flattened reference list as :func:`reference_df` counts them. Parts of an input merge with
    ``+`` (sums, so in any grouping); :meth:`table` is :func:`idf_table` of the whole input."""

    encoder: str
    df: dict[int, int]
    m: int

    def __add__(self, other: IdfCounts) -> IdfCounts:
        if not isinstance(other, IdfCounts):
            return NotImplemented
        if other.encoder != self.encoder:
            raise ValueError(f"bertscore idf counts of encoder {self.encoder!r} and {other.encoder!r} do not merge "
                             "(token ids of different tokenizers)")
        df = dict(self.df)
        for t, c in other.df.items():
            df[t] = df.get(t, 0) + c
        return IdfCounts(self.encoder, df, self.m + other.m)

    def table(self) -> tuple[dict[int, float], float]:
        return idf_from_counts(self.df, self.m)
