"""Teacher-forced (probability, rank) records from a model, without generating anything.

The protocol is one method: given a batch of conditionings (images, prompts, encoder inputs)
and the reference token ids to score, return next-token logits aligned with the targets, so
``logits[b, t]`` is the model's distribution over ``targets[b, t]`` given the conditioning and
``targets[b, :t]``. An adapter owns how its model is fed (start token, prompt, decoder start);
:func:`score_references` owns batching, padding, the memory bound and the rank/probability
arithmetic, identically for every model.

Rank rule: rank = the number of vocabulary items whose logit is strictly greater than the
target's. Tokens tied with the target therefore never push it down, so a target tied for the
maximum has rank 0; this is the batched reference script's rule (target prob == max prob).
The reference's per-caption script used numpy's unstable argsort instead, where ties take an
arbitrary order; exact float ties are practically absent from real logits. Ranks are taken
on logits rather than probabilities because the float32 softmax can merge distinct logits.

torch and transformers are imported only when an adapter is used.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import InputError
from .tokens import TokenScores

# Cap on logits materialised per forward batch (float32 elements); 2**22 = 16 MiB. Larger
# batches were slower on CPU (cache misses), not faster.
DEFAULT_MAX_LOGITS = 2**22
# Vocabulary slice used for the rank count and the log-sum-exp.
DEFAULT_VOCAB_CHUNK = 8192


@runtime_checkable
class NextTokenAdapter(Protocol):
    """What :func:`score_references` needs from a model."""

    vocab_size: int

    def logits(self, conditioning: Sequence[Any], targets, lengths):
        """Float tensor [B, T, V]: logits[b, t] scores targets[b, t] given targets[b, :t].

        ``targets`` is a LongTensor [B, T] padded past ``lengths[b]`` (LongTensor [B]);
        padded positions may hold anything.
        """


def target_prob_and_rank(logits, targets, vocab_chunk: int = DEFAULT_VOCAB_CHUNK):
    """Softmax probability and rank of each target, from logits [N, V] and targets [N].

    Works through the vocabulary in slices, so no [N, V] softmax or sort is ever built.
    """
    import torch

    if logits.dim() != 2 or targets.dim() != 1 or logits.shape[0] != targets.shape[0]:
        raise InputError(f"logits {tuple(logits.shape)} and targets {tuple(targets.shape)} do not align")
    n, v = logits.shape
    if n == 0:
        return torch.zeros(0, dtype=torch.float64), torch.zeros(0, dtype=torch.int64)
    target_logit = logits.gather(1, targets[:, None])  # [N, 1]
    greater = torch.zeros(n, dtype=torch.int64, device=logits.device)
    lse = None
    for lo in range(0, v, vocab_chunk):
        chunk = logits[:, lo : lo + vocab_chunk]
        greater += (chunk > target_logit).sum(1, dtype=torch.int32)  # 3x faster than int64
        # In the logits' own precision, like the reference's float32 softmax (≈1e-7·|lse|
        # relative error in p); float64 here cost 5x and dominated the whole pass on CPU.
        part = torch.logsumexp(chunk, 1)
        lse = part if lse is None else torch.logaddexp(lse, part)
    prob = torch.exp(target_logit[:, 0].double() - lse.double())
    return prob.double().cpu(), greater.cpu()


def _rows(length: int, vocab_size: int, max_logits: int, max_batch: int | None) -> int:
    """Captions per forward pass for captions of ``length`` tokens: the torch runner's fixed
    count, fewer when their logits would not fit in ``max_logits`` floats or ``max_batch``."""
    from ..resources.torch_runner import ROWS

    cap = ROWS if max_batch is None else min(ROWS, max_batch)
    return max(1, min(cap, max_logits // max(1, length * vocab_size)))


def score_references(
    adapter: NextTokenAdapter,
    conditioning: Sequence[Any],
    references: Sequence[Sequence[Sequence[int]]],
    end_id: int | None,
    *,
    max_logits: int = DEFAULT_MAX_LOGITS,
    max_batch: int | None = None,
    vocab_chunk: int = DEFAULT_VOCAB_CHUNK,
) -> TokenScores:
    """Score every reference caption of every image in teacher-forced batches.

    conditioning : one item per image (passed to the adapter once per reference caption).
    references : ``references[i]`` = the token-id lists of image i's reference captions.
    end_id : appended to each caption and scored (the reference scores the end token);
        None when the caption ids already end with it.
    """
    import torch

    if len(conditioning) != len(references):
        raise InputError(
            f"{len(conditioning)} conditionings but {len(references)} reference groups"
        )
    seqs: list[list[int]] = []
    owner: list[int] = []
    per_image: list[int] = []
    for i, group in enumerate(references):
        if len(group) == 0:
            raise InputError(f"image {i} has no reference captions")
        per_image.append(len(group))
        for c, cap in enumerate(group):
            ids = [int(t) for t in cap] + ([] if end_id is None else [int(end_id)])
            if not ids:
                raise InputError(f"image {i} caption {c} is empty and no end token is scored")
            bad = [t for t in ids if not 0 <= t < adapter.vocab_size]
            if bad:
                raise InputError(
                    f"image {i} caption {c}: token id {bad[0]} outside the vocabulary (0..{adapter.vocab_size - 1})"
                )
            seqs.append(ids)
            owner.append(i)
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    from ..resources.torch_runner import map_fixed

    # Every caption in a forward pass of a fixed shape: captions of its own length, as many as
    # _rows gives for that length, on the torch runner's single-threaded workers; so its scores
    # depend on it (and the options) alone, not on the other captions or the thread count.
    def forward(members: list[int]) -> list[tuple]:
        tgt = torch.as_tensor([seqs[j] for j in members], dtype=torch.int64)
        blen = torch.full((len(members),), tgt.shape[1], dtype=torch.int64)
        cond = [conditioning[owner[j]] for j in members]
        logits = adapter.logits(cond, tgt, blen)
        if tuple(logits.shape[:2]) != tuple(tgt.shape) or logits.shape[2] != adapter.vocab_size:
            raise InputError(
                f"adapter returned logits of shape {tuple(logits.shape)}; expected "
                f"{tuple(tgt.shape) + (adapter.vocab_size,)}"
            )
        p, r = target_prob_and_rank(
            logits.reshape(-1, logits.shape[2]).float(), tgt.reshape(-1).to(logits.device), vocab_chunk
        )
        return list(zip(p.cpu().split(tgt.shape[1]), r.cpu().split(tgt.shape[1])))

    # One pass at a time: a user's module need not be safe to call from two threads (the
    # adapters switch it to eval mode and back around each call).
    per_seq = map_fixed(forward, lengths.tolist(),
                        rows=lambda n: _rows(int(n), adapter.vocab_size, max_logits, max_batch), workers=1)
    return TokenScores(
        torch.cat([ps[0] for ps in per_seq]).numpy(),
        torch.cat([ps[1] for ps in per_seq]).numpy(),
        lengths,
        np.asarray(per_image, dtype=np.int64),
    )


# -- adapters ------------------------------------------------------------------------
class TorchModuleAdapter:
    """Any PyTorch captioner called as ``forward(conditioning, inputs, lengths) -> logits``.

    ``inputs`` is the targets shifted right behind ``start_id`` (the reference feeds
    ``[start] + caption`` and scores ``caption + [end]``). ``conditioning`` is stacked into
    one tensor when every item is a tensor, else passed as a list.
    """

    def __init__(
        self,
        module,
        vocab_size: int,
        start_id: int,
        forward: Callable[..., Any] | None = None,
        device: str | None = None,
    ) -> None:
        self.module = module
        self.vocab_size = int(vocab_size)
        self.start_id = int(start_id)
        self._forward = forward or module
        self.device = device

    def logits(self, conditioning, targets, lengths):
        import torch

        inputs = torch.cat(
            [torch.full((targets.shape[0], 1), self.start_id, dtype=targets.dtype), targets[:, :-1]], 1
        )
        cond: Any = conditioning
        if all(isinstance(c, torch.Tensor) for c in conditioning):
            cond = torch.stack(list(conditioning))
        if self.device is not None:
            inputs = inputs.to(self.device)
            cond = cond.to(self.device) if isinstance(cond, torch.Tensor) else cond
        was_training = getattr(self.module, "training", False)
        if was_training:
            self.module.eval()  # the reference scores without dropout
        try:
            return self._forward(cond, inputs, lengths)
        finally:
            if was_training:
                self.module.train()


class HFCausalLMAdapter:
    """A Hugging Face causal LM; the conditioning is a prompt (list of token ids) per item.

    The prompt's last token plays the start token, so a prompt must be non-empty; pass
    ``[tokenizer.bos_token_id]`` for unconditioned scoring.
    """

    def __init__(self, model, pad_id: int = 0) -> None:
        self.model = model
        self.vocab_size = int(model.config.vocab_size)
        self.pad_id = int(pad_id)

    def logits(self, conditioning, targets, lengths):
        import torch

        prompts = [list(map(int, p)) for p in conditioning]
        for j, p in enumerate(prompts):
            if not p:
                raise InputError(f"batch item {j}: empty prompt; use [bos_token_id]")
        full = [p + targets[b, : int(lengths[b])].tolist() for b, p in enumerate(prompts)]
        width = max(len(f) for f in full) - 1
        ids = torch.full((len(full), width), self.pad_id, dtype=torch.int64)
        mask = torch.zeros((len(full), width), dtype=torch.int64)
        for b, f in enumerate(full):
            ids[b, : len(f) - 1] = torch.as_tensor(f[:-1])  # right padding keeps positions
            mask[b, : len(f) - 1] = 1
        device = next(self.model.parameters()).device
        self.model.eval()
        out = self.model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
        T = targets.shape[1]
        gathered = out.new_zeros((len(full), T, out.shape[-1]))
        for b, p in enumerate(prompts):
            n = int(lengths[b])
            gathered[b, :n] = out[b, len(p) - 1 : len(p) - 1 + n]
        return gathered


class HFEncoderDecoderAdapter:
    """A Hugging Face encoder-decoder (T5, BART, VisionEncoderDecoder...).

    The conditioning of an item is a dict of its encoder inputs: ``{"input_ids": [...]}`` for
    text encoders (padded here with ``pad_id``) or tensors such as ``{"pixel_values": t}``
    (stacked). The decoder is fed ``[decoder_start_token_id] + targets[:-1]``.
    """

    def __init__(self, model, pad_id: int | None = None) -> None:
        self.model = model
        self.vocab_size = int(model.config.vocab_size)
        cfg = model.config
        start = getattr(cfg, "decoder_start_token_id", None)
        if start is None and getattr(cfg, "decoder", None) is not None:
            start = getattr(cfg.decoder, "decoder_start_token_id", None) or getattr(
                cfg.decoder, "bos_token_id", None
            )
        if start is None:
            raise InputError("model config has no decoder_start_token_id; set it on model.config")
        self.start_id = int(start)
        self.pad_id = int(pad_id if pad_id is not None else (getattr(cfg, "pad_token_id", None) or 0))

    def _encoder_inputs(self, conditioning):
        import torch

        keys = set(conditioning[0])
        for j, c in enumerate(conditioning):
            if set(c) != keys:
                raise InputError(f"batch item {j}: encoder input keys {sorted(c)} differ from {sorted(keys)}")
        out = {}
        for k in keys:
            vals = [c[k] for c in conditioning]
            if k == "input_ids" and not isinstance(vals[0], torch.Tensor):
                width = max(len(v) for v in vals)
                ids = torch.full((len(vals), width), self.pad_id, dtype=torch.int64)
                mask = torch.zeros((len(vals), width), dtype=torch.int64)
                for b, v in enumerate(vals):
                    ids[b, : len(v)] = torch.as_tensor(list(v))
                    mask[b, : len(v)] = 1
                out["input_ids"], out["attention_mask"] = ids, mask
            elif k != "attention_mask":
                out[k] = torch.stack([torch.as_tensor(v) for v in vals])
        return out

    def logits(self, conditioning, targets, lengths):
        import torch

        enc = self._encoder_inputs(conditioning)
        dec = torch.cat(
            [torch.full((targets.shape[0], 1), self.start_id, dtype=targets.dtype), targets[:, :-1]], 1
        )
        dec_mask = (torch.arange(dec.shape[1])[None, :] < lengths[:, None]).long()
        device = next(self.model.parameters()).device
        self.model.eval()
        out = self.model(
            **{k: v.to(device) for k, v in enc.items()},
            decoder_input_ids=dec.to(device),
            decoder_attention_mask=dec_mask.to(device),
        )
        return out.logits
