"""WEmbSim: cosine similarity of mean word embeddings (MOWE), Sharif et al.

No WEmbSim code is public; this follows the MOWE feature of LCEval's code, the closest
source (docs/SEMANTIC.md, WEmbSim):

1. on the tokenized caption, delete the characters ``. , " '``, lower-case, split on spaces;
2. drop stop words (NLTK's list; ``nltk-153`` by default) and words without a vector (OOV
   words are skipped, not replaced);
3. sentence vector = mean of the remaining word vectors;
4. per reference, cosine(candidate vector, reference vector);
5. per caption, ``combine`` over references: ``mean`` (default), ``max`` (LCEval's feature) or
   ``min``; the paper's choice is unknown, so the signature records it. Corpus = mean.

Empty side: when the candidate or a reference keeps no word with a vector (or its mean
vector is zero), the cosine is undefined (NaN in the reference code) and that reference
scores **-1**, as the reference code's fallback does; a warning gives the count.

Computed for the whole corpus at once: one sparse (sentences x words) averaging matrix times
the embedding rows in float64, then row-wise dot products of unit vectors.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..errors import InputError
from ..resources.vectors import WordVectors, load_vectors
from ..result import MetricScores
from ..text.stopwords import StopwordList, stopword_list
from ..dedup import dedupe
from .base import Metric, OutputInfo
from .registry import register

DELETED_CHARS = ".,\"'"  # removed from the tokenized text before splitting (LCEval MOWE)
EMPTY_SCORE = -1.0  # a reference whose cosine is undefined (the reference code's fallback)
COMBINE = ("mean", "max", "min")


def mowe_tokens(text: str, stop: StopwordList, vectors: WordVectors) -> list[str]:
    """The words whose vectors are averaged, in order."""
    for ch in DELETED_CHARS:
        text = text.replace(ch, "")
    words = stop.words
    return [w for w in text.lower().split(" ") if w and w not in words and w in vectors]


def sentence_vectors(token_lists: list[list[str]], vectors: WordVectors) -> np.ndarray:
    """Mean word vector per sentence (float64); an empty sentence gives a zero row."""
    from scipy import sparse

    lengths = np.fromiter((len(t) for t in token_lists), dtype=np.int64, count=len(token_lists))
    flat_rows = vectors.row_of(w for t in token_lists for w in t)
    used, compact = np.unique(flat_rows, return_inverse=True)
    weights = np.repeat(1.0 / np.maximum(lengths, 1), lengths)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    avg = sparse.csr_matrix((weights, compact.ravel(), indptr), shape=(len(token_lists), len(used)))
    emb = np.asarray(vectors.matrix[used], dtype=np.float64)
    return np.asarray(avg @ emb)


def unit_rows(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows scaled to unit length, and which rows had a direction at all."""
    norms = np.linalg.norm(S, axis=1)
    ok = norms > 0
    U = np.zeros_like(S)
    U[ok] = S[ok] / norms[ok, None]
    return U, ok


@register
class WEmbSim(Metric):
    """Cosine of mean word embeddings, combined over references (mean by default)."""

    family = "wembsim"
    extras = ("semantic",)
    cache_resources = ("glove-6b-50d", "spacy-md", "googlenews-word2vec")  # the vector sets it may load
    variant = "wembsim_mowe"
    outputs = (
        OutputInfo(
            "wembsim", "wembsim", "wembsim_mowe", (-1.0, 1.0), True,
            "cosine of mean word embeddings (stop words, OOV removed), combined over references",
            "Sharif et al., WEmbSim (MOWE); LCEval, ACL-SRW 2018",
        ),
    )

    def __init__(
        self,
        vectors: "str | WordVectors" = "glove-6b-50d",
        stopwords: "str | StopwordList" = "nltk-153",
        combine: str = "mean",
        vectors_format: str = "auto",
        vectors_limit: int | None = None,
    ):
        if combine not in COMBINE:
            raise InputError(f"wembsim: combine must be one of {COMBINE}, got {combine!r}")
        self.vectors = load_vectors(vectors, format=vectors_format, limit=vectors_limit)
        self.stop = stopword_list(stopwords)
        self.combine = combine

    def compute(self, candidates, references) -> MetricScores:
        units = dedupe(candidates, references)
        sent_ix: dict[str, int] = {}
        for text in units.cands:
            sent_ix.setdefault(text, len(sent_ix))
        for refs in units.refsets:
            for text in refs:
                sent_ix.setdefault(text, len(sent_ix))
        tokens = [mowe_tokens(t, self.stop, self.vectors) for t in sent_ix]
        U, ok = unit_rows(sentence_vectors(tokens, self.vectors))

        cand_sent = np.array([sent_ix[units.cands[ci]] for ci in units.unit_cand.tolist()], dtype=np.int64)
        ref_sent: list[int] = []
        pair_unit: list[int] = []
        counts: list[int] = []
        for u, ri in enumerate(units.unit_refset.tolist()):
            refs = units.refsets[ri]
            ref_sent.extend(sent_ix[r] for r in refs)
            pair_unit.extend([u] * len(refs))
            counts.append(len(refs))
        ref_arr = np.asarray(ref_sent, dtype=np.int64)
        c_arr = cand_sent[np.asarray(pair_unit, dtype=np.int64)]
        cos = np.einsum("ij,ij->i", U[c_arr], U[ref_arr])
        # Unit vectors can give 1 + 1 ulp; a cosine is reported within its range.
        cos = np.clip(cos, -1.0, 1.0)
        defined = ok[c_arr] & ok[ref_arr]
        cos[~defined] = EMPTY_SCORE

        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        if self.combine == "mean":
            unit_scores = np.add.reduceat(cos, starts) / np.asarray(counts, dtype=float)
        elif self.combine == "max":
            unit_scores = np.maximum.reduceat(cos, starts)
        else:
            unit_scores = np.minimum.reduceat(cos, starts)
        per_row = unit_scores[units.row_unit]

        empty_c = int((~ok[cand_sent]).sum())
        empty_r = int((~ok[ref_arr]).sum())
        if empty_c or empty_r:
            warnings.warn(
                f"wembsim: {empty_c} candidate(s) and {empty_r} reference(s) have no word with a "
                f"vector after stop-word removal; each such reference scores {EMPTY_SCORE}",
                stacklevel=2,
            )
        return MetricScores(
            corpus={"wembsim": float(np.mean(per_row))},
            per_caption={"wembsim": per_row},
            signature_fields={
                **self.vectors.signature_fields(),
                "stop": self.stop.id,
                "combine": self.combine,
                "prep": "del-punct4-lc",
                "empty": EMPTY_SCORE,
            },
            details={"empty_candidates": empty_c, "empty_reference_pairs": empty_r},
        )
