"""torchmetrics ``Metric``s for caption metrics torchmetrics lacks, computed exactly by capeval.

    from capeval.integrations.torchmetrics import CIDErD, BLEU, METEOR, ROUGEL, SPICE, CLAIR

    cider = CIDErD()                        # df from every caption gathered, on every rank
    cider.update(["a dog runs"], [["a dog is running", "the dog runs"]])
    cider.compute()                         # tensor(float64): capeval.score(...).corpus["cider_d"]
    cider.signature                         # the signature of that number

``update(preds, target)`` (``preds``: one caption per item; ``target``: a list of references per
item, or one reference string) scores the batch into its sufficient statistics
(``capeval.metrics.statistics``: BLEU's counts, METEOR's statistics, per-row ROUGE-L and SPICE
values) and keeps those as tensor states; ``compute()`` merges every batch's, so corpus-level
numbers (BLEU's summed statistics, METEOR's aggregate) are those of the whole set, ``==``
:func:`capeval.score` on it. Under DDP the statistics states are concatenated across processes,
in rank order: ranks exchange statistics, not strings (``state_nbytes`` says how much). The
stated exception: CIDEr-D with df from the gathered references (the default) needs that df
before any row can be scored, so it keeps the texts (UTF-8 bytes and lengths) and ``compute()``
calls :func:`capeval.score` once on all of them; with a df file it keeps statistics too.
``CLAIR(judge={...})`` asks the user's judge (docs/JUDGES.md) each batch's rows in ``update``;
FLEUR and RefFLEUR have no wrapper: ``update(preds, target)`` carries no images.

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

from ..api import score, score_statistics
from ..errors import InputError
from ..result import Result

#: State name -> dtype. Texts travel as UTF-8 bytes plus byte lengths, because states must be tensors.
_STATES = {"cand_bytes": torch.uint8, "cand_lens": torch.int64, "ref_bytes": torch.uint8,
           "ref_lens": torch.int64, "ref_counts": torch.int64}


#: The statistics states: numeric statistics (float64: integer counts below 2**53 stay exact),
#: string statistics (METEOR jar's lines) as UTF-8 bytes and lengths, each batch's layout
#: (pickled: row count, columns, aggregate, signature fields, signature) and each row's number
#: of references (for the signature's ``nrefs``).
_STAT_STATES = {"stat_values": torch.float64, "stat_text": torch.uint8, "stat_text_lens": torch.int64,
                "stat_meta": torch.uint8, "stat_meta_lens": torch.int64, "stat_nrefs": torch.int64}


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
    def plan(self):
        """The :class:`~capeval.plan.ScoringPlan` of this metric's output, tokenizer and options,
        built (its name resolved) once; every ``update`` and ``compute`` scores through it."""
        plan = self.__dict__.get("_plan")
        if plan is None:
            from ..plan import ScoringPlan

            plan = ScoringPlan.build([self.output], tokenizer=self.tokenizer)
            if self.options:
                plan = plan.with_options({plan.families[0].family: self.options})
            self.__dict__["_plan"] = plan
        return plan

    @property
    def family(self) -> str:
        """The family its options go to, as the registry says (no family name is kept here)."""
        return self.plan.families[0].family

    def __init__(self, *, tokenizer: str = "ptb", allow_empty: bool = False,
                 options: dict[str, Any] | None = None, keep_per_caption: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tokenizer = tokenizer
        self.allow_empty = allow_empty
        self.options = dict(options or {})
        #: False: each batch's statistics are reduced to what the corpus score reads (BLEU's and
        #: METEOR's to their sums: a few numbers per batch), and ``result`` has no per-caption scores.
        self.keep_per_caption = bool(keep_per_caption)
        self._check_arguments()
        self.by_statistics = self._streams()
        for name in self._states():
            self.add_state(name, default=[], dist_reduce_fx="cat")
        self.result: Result | None = None  #: the last compute()'s capeval Result (per-caption scores, signatures)

    def _check_arguments(self) -> None:
        """Every argument checked when the metric is built, not at the first ``compute()`` after a
        whole epoch of ``update()``: the tokenizer, and the family's options, by building the
        capeval metric they describe once (a df file is read then, and refused if bad)."""
        from ..api import instantiate
        from ..text import tokenizer_id

        name = type(self).__name__
        if not isinstance(self.tokenizer, str):
            raise InputError(f"{name}(tokenizer={self.tokenizer!r}): a tokenizer name")
        tokenizer_id(self.tokenizer)
        if not isinstance(self.allow_empty, bool):
            raise InputError(f"{name}(allow_empty={self.allow_empty!r}): True or False")
        metric = instantiate(self.plan.families[0].cls, self.options)
        close = getattr(metric, "close", None)
        if close is not None:
            close()

    def _streams(self) -> bool:
        """Whether this family streams with these options and has no corpus pre-pass (CIDEr-D's df)."""
        from ..plan import empty_prepass
        cls = self.plan.families[0].cls
        if cls.cannot_stream(self.options) is not None:
            return False
        with cls(**self.options) as metric:
            return empty_prepass(metric) is None

    def _states(self) -> dict[str, torch.dtype]:
        return _STAT_STATES if self.by_statistics else _STATES

    @property
    def state_nbytes(self) -> int:
        """Bytes held in this metric's states (this rank's, or every rank's after a sync)."""
        total = 0
        for name in self._states():
            state = getattr(self, name)
            total += sum(t.numel() * t.element_size() for t in (state if isinstance(state, list) else [state]))
        return total

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
        if self.by_statistics:
            self._update_statistics(preds, refs, counts)
            return
        cand_data, cand_lens = _encode(preds, "pred")
        ref_data, ref_lens = _encode(refs, "reference")
        for name, value in (("cand_bytes", _bytes_tensor(cand_data)), ("cand_lens", torch.tensor(cand_lens)),
                            ("ref_bytes", _bytes_tensor(ref_data)), ("ref_lens", torch.tensor(ref_lens)),
                            ("ref_counts", torch.tensor(counts))):
            getattr(self, name).append(value.to(device=self.device, dtype=_STATES[name]))

    def _update_statistics(self, preds: list[str], refs: list[str], counts: list[int]) -> None:
        import pickle

        import numpy as np

        groups, pos = [], 0
        for n in counts:
            groups.append(refs[pos:pos + n])
            pos += n
        _encode(preds, "pred")  # the texts' check, as the text states make it
        _encode(refs, "reference")
        res, stats = score_statistics(preds, groups, plan=self.plan, allow_empty=self.allow_empty)
        st = stats[self.family]
        if not self.keep_per_caption:
            st = st.reduced()
        numeric = [k for k, v in st.rows.items() if v.dtype.kind in "biuf"]
        text = [k for k in st.rows if k not in numeric]
        values = [np.asarray(st.rows[k]).reshape(st.n, -1).astype(np.float64) for k in numeric]
        flat = np.concatenate(values, axis=1).ravel() if values else np.zeros(0)
        strings = [str(x) for k in text for x in st.rows[k].tolist()]
        text_data, text_lens = _encode(strings, "statistics line")
        rows_kept = len(next(iter(st.rows.values()))) if st.rows else 0
        meta = pickle.dumps({"n": st.n, "rows": rows_kept, "numeric": [(k, st.rows[k].dtype.str, st.rows[k].shape[1:]) for k in numeric],
                             "text": text, "totals": st.totals, "aggregate": st.aggregate, "fields": st.fields,
                             "signature": res.signatures[self.output]})
        for name, value in (("stat_values", torch.from_numpy(flat)), ("stat_text", _bytes_tensor(text_data)),
                            ("stat_text_lens", torch.tensor(text_lens, dtype=torch.int64)),
                            ("stat_meta", _bytes_tensor(meta)), ("stat_meta_lens", torch.tensor([len(meta)])),
                            ("stat_nrefs", torch.tensor(counts))):
            getattr(self, name).append(value.to(device=self.device, dtype=_STAT_STATES[name]))

    def _cat(self, name: str) -> torch.Tensor:
        state = getattr(self, name)
        if isinstance(state, list) and not state:
            return torch.zeros(0, dtype=self._states()[name])
        return dim_zero_cat(state) if isinstance(state, list) else state

    def _merged_statistics(self):
        """Every batch's statistics (all ranks' after a sync, in rank order), merged, and the
        per-batch layouts."""
        import pickle

        import numpy as np

        from ..metrics.statistics import Statistics

        raw = self._cat("stat_meta").cpu().numpy().tobytes()
        metas, pos = [], 0
        for n in self._cat("stat_meta_lens").cpu().tolist():
            metas.append(pickle.loads(raw[pos:pos + n]))  # noqa: S301 - written by update() of this job's ranks
            pos += n
        if not metas:
            return None, metas
        values = self._cat("stat_values").cpu().numpy()
        strings = _decode(self._cat("stat_text"), self._cat("stat_text_lens"))
        parts, vpos, tpos = [], 0, 0
        for m in metas:
            n = m["rows"]  # the batch's rows, or none when it was reduced to totals
            widths = [int(np.prod(shape)) for _k, _dt, shape in m["numeric"]]
            block = values[vpos:vpos + n * sum(widths)].reshape(n, sum(widths))
            vpos += n * sum(widths)
            rows, col = {}, 0
            for (k, dt, shape), w in zip(m["numeric"], widths):
                rows[k] = np.ascontiguousarray(block[:, col:col + w].astype(np.dtype(dt)).reshape((n, *shape)))
                col += w
            for k in m["text"]:
                rows[k] = np.array(strings[tpos:tpos + n], dtype=object)
                tpos += n
            parts.append(Statistics(m["n"], m["aggregate"], rows, m["totals"], m["fields"]))
        return Statistics.merge(parts), metas

    def _compute_statistics(self) -> torch.Tensor:
        import numpy as np

        from ..signature import with_fields, with_last_fields
        from ..text import tokenizer_id
        from ..validation import LINE_BREAK_TAG

        merged, metas = self._merged_statistics()
        if merged is None:
            raise InputError(f"{type(self).__name__}.compute: no captions were given to update()")
        breaks = LINE_BREAK_TAG if any(LINE_BREAK_TAG in m["signature"] for m in metas) else ""
        tok = (tokenizer_id(self.tokenizer) if self.plan.needs_tokens else "none") + breaks
        counts = set(self._cat("stat_nrefs").cpu().tolist())
        nrefs = str(counts.pop()) if len(counts) == 1 else "var"
        sig = with_fields(metas[0]["signature"], tok=tok, nrefs=nrefs)
        # whole-input fields (a judge's unanswered rows) are every batch's, not the first one's
        sig = with_last_fields(sig, merged.aggregate.fields(merged), ("trunc", "ood", "unans"))
        value = float(merged.corpus()[self.output])
        per = {self.output: np.asarray(merged.per_caption()[self.output], dtype=float)} if self.keep_per_caption else {}
        self.result = Result(corpus={self.output: value}, per_caption=per,
                             signatures={self.output: sig}, n=merged.n)
        return torch.tensor(value, dtype=torch.float64)

    def _sync_dist(self, dist_sync_fn=None, process_group=None) -> None:
        # A rank that saw no data would otherwise send torchmetrics' empty placeholder of the
        # metric's float dtype while the others send bytes; all_gather needs one dtype.
        for name, dtype in self._states().items():
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
        if self.by_statistics:
            return self._compute_statistics()
        cands, refs = self.texts()
        if not cands:
            raise InputError(f"{type(self).__name__}.compute: no captions were given to update()")
        self.result = score(cands, refs, plan=self.plan, tokenizer=self.tokenizer, allow_empty=self.allow_empty)
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


class CLAIR(_CaptionMetric):
    """CLAIR, the LLM judge, on the user's endpoint or local model: ``judge`` holds the ``clair``
    family's options (``{"url": ..., "model": ...}``, docs/JUDGES.md). Each ``update`` asks the judge
    its rows (answers cached, unanswered rows NaN and counted); ``compute`` is their mean, and
    fails as :func:`capeval.score` does when more rows are unanswered than ``allow_unanswered``."""

    output = "clair"

    def __init__(self, judge: dict[str, Any], **kwargs: Any) -> None:
        self.allow_unanswered = int(dict(judge).get("allow_unanswered", 0))
        super().__init__(options=dict(judge), **kwargs)

    def _update_statistics(self, preds: list[str], refs: list[str], counts: list[int]) -> None:
        # a batch is not the run: it may leave every row unanswered (one allowance for all batches,
        # so that their statistics merge), and compute() holds all their unanswered rows to the run's
        plan = self.plan
        self.__dict__["_plan"] = plan.with_options({self.family: {**self.options, "allow_unanswered": 2 ** 62}})
        try:
            super()._update_statistics(preds, refs, counts)
        finally:
            self.__dict__["_plan"] = plan

    def _merged_statistics(self):
        from ..signature import with_fields

        merged, metas = super()._merged_statistics()
        if merged is not None:
            merged.aggregate.allow = self.allow_unanswered
            for m in metas:
                m["signature"] = with_fields(m["signature"], allow=str(self.allow_unanswered))
        return merged, metas
