"""CIDEr-D as a reward: many small batches scored against one fixed df, at low latency.

Self-critical sequence training (Rennie et al., CVPR 2017) scores every sampled batch with
CIDEr-D whose document frequencies come from the training references, computed once. With a
df from the scored set instead, a caption's reward would depend on the rest of its batch.

    import capeval
    from capeval.metrics.cider import DocumentFrequency

    # once: df of the training references (or DocumentFrequency.load("train-df.json"),
    # or the df file of `capeval score --save-cider-df` / a streamed run)
    df = DocumentFrequency.from_references(train_refsets, [1] * len(train_refsets))
    reward = capeval.CiderDReward(df)             # tokenizer="none": text already tokenized
    r = reward(sampled_captions, batch_references)  # float64 array, one CIDEr-D per caption
    print(reward.signature(batch_references))

Scores are exactly :class:`capeval.metrics.cider.CiderD` with the same df (which equals
pycocoevalcap's ``CiderScorer`` given that df); this class only keeps the df loaded and its
lookup table built between calls. benchmarks/bench_percaption.py measures the latency.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .errors import InputError
from .metrics._ngrams import NgramIndex
from .metrics.cider import SIGMA, CiderD, DocumentFrequency
from .signature import nrefs_field, signature_line
from .text import tokenize_corpus, tokenizer_id
from .validation import validate_corpus


class CiderDReward:
    """Callable ``(candidates, references) -> per-caption CIDEr-D`` against a fixed df.

    Parameters
    ----------
    df : DocumentFrequency or path
        The fixed document frequencies (a df file written by ``save_df`` / ``--save-cider-df``).
    sigma : float, default 6.0
        CIDEr-D length-penalty width.
    tokenizer : {"none", "ptb", "ptb-java"}, default "none"
        Training loops usually hold tokenized text already; "ptb" tokenizes as pycocoevalcap.
    allow_empty : bool, default True
        An empty sampled caption scores 0 (a degenerate sample is a valid, low reward).
    """

    def __init__(self, df: DocumentFrequency | str | Path, *, sigma: float = SIGMA, tokenizer: str = "none",
                 allow_empty: bool = True):
        if isinstance(df, str) and df == "corpus":
            raise InputError("CiderDReward needs a fixed df (a DocumentFrequency or a df file), not 'corpus': "
                             "with the batch's own df a caption's reward depends on the rest of its batch")
        self.df = df if isinstance(df, DocumentFrequency) else DocumentFrequency.load(df)
        self.tokenizer = tokenizer
        self._tok = tokenizer_id(tokenizer)  # refuses an unknown name now, not at the first batch
        self.allow_empty = allow_empty
        self._metric = CiderD(df=self.df, sigma=sigma)
        # Build the df's lookup table now, so the first batch is as fast as the others.
        self.df.lookup_ids(NgramIndex([]))

    def __call__(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
        cands, refs = validate_corpus(candidates, references, allow_empty=self.allow_empty)
        if self.tokenizer != "none":
            cands, refs = tokenize_corpus(cands, refs, self.tokenizer)
        return self._metric.compute(cands, refs).per_caption["cider_d"]

    def signature(self, references: Sequence[Sequence[str]]) -> str:
        """The signature of scores of a batch with these references (``nrefs`` is the batch's)."""
        fields = {"n": 4, "df": self.df.source, "sigma": self._metric.sigma}
        return signature_line(CiderD.variant, out="cider_d", tok=self._tok, nrefs=nrefs_field(references),
                                  **fields)
