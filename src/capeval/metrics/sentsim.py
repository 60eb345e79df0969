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
from .base import Metric, OutputInfo
from .registry import register

VARIANT = "sentsim_meanpool"
CITATION = ("Reimers & Gurevych (2019). Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks. "
            "EMNLP.")


def embed(tokenizer, model, sentences: Sequence[str], *, batch_size: int = 128) -> np.ndarray:
    """L2-normalised mean-pooled last-layer states (float64), in the order given.

    Sentences are batched by token length so padding stays small; padding is masked out of
    the mean, so the batching does not change the result beyond float32 rounding.
    """
    import torch

    from ..resources.encoders import tokenizer_lock

    with tokenizer_lock(tokenizer):  # shared tokenizers are not safe to call from two threads
        ids = tokenizer(list(sentences), add_special_tokens=True, truncation=True)["input_ids"]
    order = np.argsort([len(x) for x in ids], kind="stable")
    out = np.zeros((len(sentences), model.config.hidden_size), dtype=np.float64)
    pad = tokenizer.pad_token_id or 0
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            width = max(len(ids[i]) for i in idx)
            inp = torch.full((len(idx), width), pad, dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            for r, i in enumerate(idx):
                inp[r, :len(ids[i])] = torch.tensor(ids[i])
                mask[r, :len(ids[i])] = 1
            h = model(input_ids=inp, attention_mask=mask).last_hidden_state
            m = mask.unsqueeze(-1).to(h.dtype)
            pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
            out[idx] = pooled.double().numpy()
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
        Sentences per forward pass (memory and speed only).
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

    @classmethod
    def cannot_stream(cls, options: dict) -> str | None:
        from .statistics import batch_rounding

        return batch_rounding(cls.family, options)

    def __init__(self, model=None, batch_size: int = 128) -> None:
        from ..resources.encoders import resolve_encoder

        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"sentsim: batch_size must be a positive integer, got {batch_size!r}")
        self.encoder = resolve_encoder(model)
        self.batch_size = batch_size

    def compute(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> MetricScores:
        import torch

        from ..resources.encoders import load_encoder, weights_revision

        tokenizer, model = load_encoder(self.encoder.location)
        distinct = list(dict.fromkeys([*candidates, *(r for refs in references for r in refs)]))
        where = {s: i for i, s in enumerate(distinct)}
        E = embed(tokenizer, model, distinct, batch_size=self.batch_size)
        cand = E[[where[c] for c in candidates]]
        refs = [E[[where[r] for r in rs]] for rs in references]
        per = similarities(cand, refs)
        return MetricScores(
            corpus={k: float(np.mean(v)) for k, v in per.items()},
            per_caption=per,
            signature_fields={"model": self.encoder.name, "rev": weights_revision(self.encoder.location),
                              "pool": "mean-last", "norm": "l2", "torch": torch.__version__},
        )
