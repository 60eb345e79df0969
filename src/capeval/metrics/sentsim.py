"""Sentence-embedding similarity: cosine between mean-pooled sentence embeddings.

The packaged encoder, all-MiniLM-L6-v2, is a sentence-transformers model trained so that the
cosine of its mean-pooled, L2-normalised last-layer token states measures semantic similarity
(Reimers & Gurevych, EMNLP 2019). The candidate's embedding is compared with each reference's;
``sentsim_max`` keeps the best reference, ``sentsim_mean`` averages over references (a
consensus score, less sensitive to one lucky reference) and ``sentsim_centroid`` compares with
the normalised mean of the reference embeddings. Each distinct sentence is encoded once.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InputError
from ..result import MetricScores
from . import _long_text
from .base import Metric, OutputInfo
from .registry import register

VARIANT = "sentsim_meanpool"
CITATION = ("Reimers & Gurevych (2019). Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks. "
            "EMNLP.")


def embed(tokenizer, model, sentences: Sequence[str], *, batch_size: int = 128, long_text: str = "truncate",
          cut: dict[str, int] | None = None) -> np.ndarray:
    """L2-normalised mean-pooled last-layer states (float64), in the order given.

    Every sentence goes through the torch runner (``capeval.resources.torch_runner``): in a
    batch of its fixed shape, 8 sentences of one token length, so no position is padding and
    the mean is over the sentence's own tokens, on threads with one intra-op thread each. A
    sentence's vector depends on its tokens alone: not on the thread count, on other threads
    scoring at once or on the other sentences. ``batch_size``: sentences a thread takes at a
    time (scheduling only). ``long_text``: ``truncate`` cuts at the tokenizer's limit (and
    ``cut``, when given, receives the tokens it dropped per sentence); ``windows`` pools a longer
    sentence's token states over the whole text, each state from the overlapping window where
    the token has the most context (:mod:`capeval.metrics._bertscore_windows`).
    """
    import torch

    from ..resources.encoders import tokenizer_lock
    from ..resources.torch_runner import map_fixed
    from ._bertscore_windows import cut_tokens, plan_windows, token_window

    limit = token_window(tokenizer)
    windows = long_text == "windows" and limit is not None

    def tokenize(texts: list[str], full: bool) -> list[list[int]]:
        with tokenizer_lock(tokenizer):  # shared tokenizers are not safe to call from two threads
            if full:  # the windows make such a sequence fit: no "longer than the maximum" log
                getattr(tokenizer, "deprecation_warnings", {})[
                    "sequence-length-is-longer-than-the-specified-maximum"] = True
            return tokenizer(texts, add_special_tokens=True, truncation=not full)["input_ids"]

    ids = tokenize(list(sentences), windows)
    if cut is not None and not windows:
        cut.update(cut_tokens(list(sentences), ids, limit, lambda some: tokenize(some, True)))
    long = [k for k, x in enumerate(ids) if windows and len(x) > (limit or 0)]
    fits = sorted(set(range(len(ids))) - set(long))

    def forward(idx: list[int]) -> np.ndarray:
        x = torch.tensor([ids[i] for i in idx], dtype=torch.long)
        h = model(input_ids=x, attention_mask=torch.ones_like(x)).last_hidden_state
        return (h.sum(1) / h.shape[1]).double().numpy()

    width = model.config.hidden_size
    out = np.zeros((len(ids), width), dtype=np.float64)
    if fits:
        got = map_fixed(lambda idx: forward([fits[i] for i in idx]), [len(ids[k]) for k in fits],
                        per_task=batch_size)
        out[fits] = np.stack(got)
    if long:
        if limit is None or limit <= 2:
            raise InputError("sentsim: long_text=windows needs a tokenizer with a length limit above 2")
        pieces, plans = plan_windows([ids[k] for k in long], limit)

        def states(idx: list[int]) -> list:
            x = torch.tensor([pieces[i] for i in idx], dtype=torch.long)
            return list(model(input_ids=x, attention_mask=torch.ones_like(x)).last_hidden_state.unbind(0))

        got = map_fixed(states, [len(p) for p in pieces], per_task=batch_size)
        for k, (piece, row) in zip(long, plans):
            h = torch.stack([got[p][j] for p, j in zip(piece, row)])
            out[k] = (h.sum(0) / h.shape[0]).double().numpy()
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms > 0, norms, 1.0)


def similarities(cand_vecs: np.ndarray, ref_vecs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Per candidate: max / mean cosine over its references and cosine with their centroid."""
    mx = np.empty(len(ref_vecs))
    mean = np.empty(len(ref_vecs))
    cen = np.empty(len(ref_vecs))
    for i, (c, R) in enumerate(zip(cand_vecs, ref_vecs)):
        cos = R @ c
        mx[i], mean[i] = cos.max(), cos.mean()
        centroid = R.mean(axis=0)
        nrm = np.linalg.norm(centroid)
        cen[i] = float(centroid @ c / nrm) if nrm > 0 else 0.0
    return {"sentsim_max": mx, "sentsim_mean": mean, "sentsim_centroid": cen}


@register
class SentenceSimilarity(Metric):
    """Cosine similarity of sentence embeddings (module docstring).

    Parameters
    ----------
    model : str or Path, optional
        Encoder alias, hub id or local directory (default: the packaged all-MiniLM-L6-v2).
        The pooling is the one all-MiniLM-L6-v2 and all-mpnet-base-v2 were trained with.
    batch_size : int
        Sentences an encoder thread takes at a time (speed only: every forward pass has the
        torch runner's fixed shape, so no value depends on it).
    long_text : {"truncate", "windows"}
        Past the tokenizer's limit (512 for MiniLM): ``truncate`` (default, sentence-transformers'
        behaviour) cuts, and the run says how many texts and tokens it cut (warning,
        ``details["sentsim"]["long_text"]``, ``trunc:N`` in the signature); ``windows`` mean-pools
        the token states of the whole text, read through overlapping windows (docs/LONG_CAPTIONS.md).
    """

    family = "sentsim"
    extras = ("bertscore",)
    variant = VARIANT
    outputs = (
        OutputInfo("sentsim_max", "sentsim", VARIANT, (-1.0, 1.0), True,
                   "sentence-embedding cosine, max over references", CITATION),
        OutputInfo("sentsim_mean", "sentsim", VARIANT, (-1.0, 1.0), True,
                   "sentence-embedding cosine, mean over references", CITATION),
        OutputInfo("sentsim_centroid", "sentsim", VARIANT, (-1.0, 1.0), True,
                   "sentence-embedding cosine with the references' mean embedding", CITATION),
    )
    text_input = "raw"

    @classmethod
    def resources_for(cls, options: dict) -> tuple[str, ...]:
        """Only the encoder the ``model`` option names (a directory is not a registered resource)."""
        from ..resources.encoders import encoder_resource

        name = encoder_resource(options.get("model"))
        return (name,) if name else ()

    def __init__(self, model=None, batch_size: int = 128, long_text: str = "truncate") -> None:
        from ..resources.encoders import resolve_encoder

        self.long_text = _long_text.check_mode("sentsim", long_text, ("truncate", "windows"))
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"sentsim: batch_size must be a positive integer, got {batch_size!r}")
        self.encoder = resolve_encoder(model)
        self.batch_size = batch_size

    def statistics(self, candidates, references, **kw):
        return _long_text.statistics(self, self.family, self.long_text, candidates, references, **kw)

    def compute(self, candidates: Sequence[str], references: Sequence[Sequence[str]], *,
                _warn_long: bool = True) -> MetricScores:
        import torch

        from ._bertscore_windows import token_window

        from ..resources.encoders import load_encoder, weights_revision

        tokenizer, model = load_encoder(self.encoder.location)
        distinct = list(dict.fromkeys([*candidates, *(r for refs in references for r in refs)]))
        where = {s: i for i, s in enumerate(distinct)}
        cut: dict[str, int] = {}
        E = embed(tokenizer, model, distinct, batch_size=self.batch_size, long_text=self.long_text, cut=cut)
        cand = E[[where[c] for c in candidates]]
        refs = [E[[where[r] for r in rs]] for rs in references]
        per = similarities(cand, refs)
        out = MetricScores(
            corpus={k: float(np.mean(v)) for k, v in per.items()},
            per_caption=per,
            signature_fields={"model": self.encoder.name, "rev": weights_revision(self.encoder.location),
                              "pool": "mean-last", "norm": "l2", "torch": torch.__version__},
        )
        return _long_text.finish(out, self.family, self.long_text, token_window(tokenizer),
                                 *_long_text.row_cuts(cut, candidates, references), warn=_warn_long)
