"""torchmetrics ``Metric``s for caption metrics torchmetrics lacks, computed exactly by capeval.

    from capeval.integrations.torchmetrics import CIDErD, BLEU, METEOR, ROUGEL, SPICE

    cider = CIDErD()                        # df from every caption gathered, on every rank
    cider.update(["a dog runs"], [["a dog is running", "the dog runs"]])
    cider.compute()                         # tensor(float64): capeval.score(...).corpus["cider_d"]
    cider.signature                         # the signature of that number

``update(preds, target)`` only stores the strings (``preds``: one caption per item; ``target``: a
list of references per item, or one reference string). ``compute()`` calls :func:`capeval.score`
once on everything gathered, so corpus-level numbers (CIDEr-D's document frequencies, BLEU's
summed statistics, METEOR's aggregate) are those of the whole set. Under DDP the stored texts
are list states (UTF-8 bytes and lengths, concatenated across processes), so every rank computes
the score of all ranks' captions, in rank order.

Requires ``torchmetrics`` (the ``torchmetrics`` extra: ``pip install -e '.[torchmetrics]'`` in the
capeval checkout).
"""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import torch
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from ..api import score
from ..errors import InputError

#: State name -> dtype. Texts travel as UTF-8 bytes plus byte lengths, because states must be tensors.
_STATES = {"cand_bytes": torch.uint8, "cand_lens": torch.int64, "ref_bytes": torch.uint8,
           "ref_lens": torch.int64, "ref_counts": torch.int64}


def _encode(texts: list[str], what: str) -> tuple[bytes, list[int]]:
    out = []
    for i, t in enumerate(texts):
        try:
            out.append(t.encode("utf-8"))
        except UnicodeEncodeError as e:
            raise InputError(f"{what} {i} is not valid Unicode ({e.reason} at {e.start}): {t!r:.80}") from None
    return b"".join(out), [len(b) for b in out]


def _bytes_tensor(data: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.zeros(0, dtype=torch.uint8)


def _decode(data: torch.Tensor, lens: torch.Tensor) -> list[str]:
    raw = data.cpu().numpy().tobytes()
    out, pos = [], 0
    for n in lens.cpu().tolist():
        out.append(raw[pos:pos + n].decode("utf-8"))
        pos += n
    return out


class _CaptionMetric(Metric):
    """Stores captions and references; ``compute`` is one :func:`capeval.score` call."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    #: The capeval output this metric returns.
    output: str

    @property
    def family(self) -> str:
        """The family its options go to, as the registry says (no family name is kept here)."""
        from ..metrics.registry import family_for

        return family_for(self.output).family

    def __init__(self, *, tokenizer: str = "ptb", allow_empty: bool = False,
                 options: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tokenizer = tokenizer
        self.allow_empty = allow_empty
        self.options = dict(options or {})
        self._check_arguments()
        for name in _STATES:
            self.add_state(name, default=[], dist_reduce_fx="cat")
        self.result = None  #: the last compute()'s capeval Result (per-caption scores, signatures)

    def _check_arguments(self) -> None:
        """Every argument checked when the metric is built, not at the first ``compute()`` after a
        whole epoch of ``update()``: the tokenizer, and the family's options, by building the
        capeval metric they describe once (a df file is read then, and refused if bad)."""
        from ..api import _instantiate
        from ..metrics.registry import get_family
        from ..text import tokenizer_id

        name = type(self).__name__
        if not isinstance(self.tokenizer, str):
            raise InputError(f"{name}(tokenizer={self.tokenizer!r}): a tokenizer name")
        tokenizer_id(self.tokenizer)
        if not isinstance(self.allow_empty, bool):
            raise InputError(f"{name}(allow_empty={self.allow_empty!r}): True or False")
        metric = _instantiate(get_family(self.family), self.options)
        close = getattr(metric, "close", None)
        if close is not None:
            close()

    def update(self, preds: Sequence[str], target: Sequence[str | Sequence[str]]) -> None:
        if isinstance(preds, str) or not all(isinstance(p, str) for p in preds):
            raise InputError(f"{type(self).__name__}.update: preds must be a list of caption strings")
        preds = list(preds)
        target = list(target)
        if len(preds) != len(target):
            raise InputError(f"{type(self).__name__}.update: {len(preds)} preds but {len(target)} targets")
        refs: list[str] = []
        counts: list[int] = []
        for i, t in enumerate(target):
            group = [t] if isinstance(t, str) else list(t)
            if not all(isinstance(r, str) for r in group):
                raise InputError(f"{type(self).__name__}.update: target {i} must be a string or a list of strings")
            refs.extend(group)
            counts.append(len(group))
        cand_data, cand_lens = _encode(preds, "pred")
        ref_data, ref_lens = _encode(refs, "reference")
        for name, value in (("cand_bytes", _bytes_tensor(cand_data)), ("cand_lens", torch.tensor(cand_lens)),
                            ("ref_bytes", _bytes_tensor(ref_data)), ("ref_lens", torch.tensor(ref_lens)),
                            ("ref_counts", torch.tensor(counts))):
            getattr(self, name).append(value.to(device=self.device, dtype=_STATES[name]))

    def _sync_dist(self, dist_sync_fn=None, process_group=None) -> None:
        # A rank that saw no data would otherwise send torchmetrics' empty placeholder of the
        # metric's float dtype while the others send bytes; all_gather needs one dtype.
        for name, dtype in _STATES.items():
            state = getattr(self, name)
            if isinstance(state, list) and not state:
                state.append(torch.zeros(0, dtype=dtype, device=self.device))
        kwargs = {} if dist_sync_fn is None else {"dist_sync_fn": dist_sync_fn}
        super()._sync_dist(process_group=process_group, **kwargs)

    def texts(self) -> tuple[list[str], list[list[str]]]:
        """Every stored caption and its references (all ranks' after a sync)."""
        def cat(name):
            state = getattr(self, name)
            if isinstance(state, list) and not state:
                return torch.zeros(0, dtype=_STATES[name])
            return dim_zero_cat(state)

        cands = _decode(cat("cand_bytes"), cat("cand_lens"))
        flat = _decode(cat("ref_bytes"), cat("ref_lens"))
        refs, pos = [], 0
        for n in cat("ref_counts").cpu().tolist():
            refs.append(flat[pos:pos + n])
            pos += n
        return cands, refs

    def compute(self) -> torch.Tensor:
        cands, refs = self.texts()
        if not cands:
            raise InputError(f"{type(self).__name__}.compute: no captions were given to update()")
        options = {self.family: self.options} if self.options else None
        self.result = score(cands, refs, [self.output], tokenizer=self.tokenizer, allow_empty=self.allow_empty,
                            options=options)
        return torch.tensor(self.result.corpus[self.output], dtype=torch.float64)

    @property
    def signature(self) -> str | None:
        """The signature of the last computed value (None before ``compute``)."""
        return None if self.result is None else self.result.signatures[self.output]


class CIDErD(_CaptionMetric):
    """CIDEr-D as pycocoevalcap reports it ("CIDEr"), with df from all gathered references by
    default; ``df`` may name a df file (fixed document frequencies), ``sigma`` the length penalty."""

    output = "cider_d"

    def __init__(self, df: str | None = None, sigma: float | None = None, **kwargs: Any) -> None:
        options = {k: v for k, v in (("df", df), ("sigma", sigma)) if v is not None}
        super().__init__(options=options, **kwargs)


class BLEU(_CaptionMetric):
    """BLEU-``n_gram`` (1 to 4), coco variant: corpus score from statistics summed over all captions."""

    def __init__(self, n_gram: int = 4, **kwargs: Any) -> None:
        # 2.0 == 2, but the output would be named "bleu2.0": integers only (numpy's too).
        try:
            order = operator.index(n_gram)
        except TypeError:
            order = None
        if isinstance(n_gram, bool) or order not in (1, 2, 3, 4):
            raise InputError(f"BLEU(n_gram={n_gram!r}): capeval's coco BLEU has orders 1 to 4, given as an integer")
        self.n_gram = order
        self.output = f"bleu{order}"  # before the base's argument check, which looks up its family
        super().__init__(**kwargs)


class METEOR(_CaptionMetric):
    """METEOR 1.5 as pycocoevalcap's jar computes it (native backend by default: no Java)."""

    output = "meteor"

    def __init__(self, backend: str | None = None, **kwargs: Any) -> None:
        super().__init__(options={"backend": backend} if backend else None, **kwargs)


class ROUGEL(_CaptionMetric):
    """ROUGE-L F (beta 1.2) as pycocoevalcap computes it, averaged over captions."""

    output = "rouge_l"


class SPICE(_CaptionMetric):
    """SPICE-py: capeval's approximation of SPICE (spaCy + WordNet); ``backend="jar"`` runs the jar."""

    output = "spice"

    def __init__(self, backend: str | None = None, **kwargs: Any) -> None:
        super().__init__(options={"backend": backend} if backend else None, **kwargs)
