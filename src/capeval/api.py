"""``capeval.score``: validate → tokenize once → each metric family once → one Result."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from .errors import CapevalError, InputError, UserCodeError
from .metrics.registry import METRIC_SETS
from .metrics.statistics import Statistics
from .plan import FamilyPlan, ScoringPlan, as_plan, check_option_names
from .progress import reporting
from .result import Result
from .signature import nrefs_field
from .text import tokenize_corpus, tokenizer_id
from .validation import prepare_texts

DEFAULT_METRICS = METRIC_SETS["coco"]


def shareable_outputs(cls) -> set[str]:
    return {o.name for o in cls.outputs}


def _emptied_by_tokenizer(cands, refs, tokenized, ids, allow_empty: bool, tokenizer: str) -> dict[str, int]:
    """Texts that the tokenizer turns into nothing ("...", a lone dash): n-gram metrics score
    them as empty. A candidate follows the empty-caption rule (refused unless ``allow_empty``);
    references and allowed candidates are counted in the result and warned about."""
    if tokenized is None:
        return {}
    import warnings

    from .validation import item_label

    tok_c, tok_r = tokenized
    cand_ix = [i for i, (raw, t) in enumerate(zip(cands, tok_c)) if raw.strip() and not t.strip()]
    if cand_ix and not allow_empty:
        i = cand_ix[0]
        raise InputError(
            f"{item_label('candidate', i, ids)} is empty after the {tokenizer} tokenizer ({cands[i]!r}); "
            f"{len(cand_ix)} candidate(s) in all. Pass allow_empty=True (CLI: --allow-empty) to score them "
            "as empty captions (0 for n-gram metrics)."
        )
    n_refs = sum(1 for raw_refs, t_refs in zip(refs, tok_r) for raw, t in zip(raw_refs, t_refs)
                 if raw.strip() and not t.strip())
    out = {k: v for k, v in (("candidates", len(cand_ix)), ("references", n_refs)) if v}
    if out:
        # Every occurrence counts (a reference repeated across items is counted each time), and
        # the totals say what it is out of.
        total = {"candidates": len(cands), "references": sum(map(len, refs))}
        warnings.warn(f"{', '.join(f'{v} of {total[k]} {k}' for k, v in out.items())} empty after the {tokenizer} tokenizer "
                      "(scored as empty text by the n-gram metrics); counted in result.details['input']",
                      stacklevel=4)
    return out


def instantiate(cls, opts: dict[str, Any]):
    """The family's metric with ``opts``; an unknown key or a refused value is an
    :class:`InputError` naming the family (not a TypeError from deep inside)."""
    check_option_names(cls, opts)
    return _construct(cls, opts)


def _construct(cls, opts: dict[str, Any], fam: FamilyPlan | None = None):
    """``cls(**opts)`` with options already checked by name (a plan's, ``fam``)."""
    try:
        with contained(fam if fam is not None else cls.family, "while it was built"):
            return cls(**opts)
    except InputError:
        raise
    except (TypeError, ValueError) as e:
        raise InputError(f"{cls.family} options {opts!r}: {e}") from None


@contextmanager
def contained(family: str | FamilyPlan, when: str = "while scoring"):
    """A metric's (a plug-in's) ``SystemExit`` or ``GeneratorExit`` as an error naming it: in a
    streamed worker or this process, it must never end the run as if it had succeeded. Any
    other exception of third-party code (a plug-in or user metric) is a :class:`UserCodeError`
    naming the metric and where it raised; a built-in's is capeval's own bug and stays as it
    is. A copy of the process that third-party code forked and that returns here ends at once,
    so it never goes on to write outputs (docs/RELIABILITY.md, *User code*). ``family``: its
    name, or a plan's family (which knows who wrote it)."""
    import os

    from . import _process

    if isinstance(family, FamilyPlan):
        who = family.origin
        family = family.cls.family
    else:
        from .metrics.registry import third_party

        who = third_party(family)
    pid = os.getpid()
    previous = _process.running(f"{family!r} ({who})") if who is not None else None
    try:
        yield
    except (SystemExit, GeneratorExit) as e:
        _left_fork(pid)
        raise InputError(f"metric {family!r} raised {type(e).__name__}({e}) {when}; "
                         "a metric returns its scores or raises an exception") from None
    except CapevalError:
        _left_fork(pid)
        raise
    except Exception as e:
        _left_fork(pid)
        if who is None:
            raise
        raise UserCodeError(f"metric {family!r} ({who}) raised {type(e).__name__} {when}{_said(e)}"
                            f"{_where(e)}") from e
    finally:
        _left_fork(pid)
        if who is not None:
            _process.restore(previous)


def _left_fork(pid: int) -> None:
    import os

    if os.getpid() != pid:  # a child the metric forked came back into capeval: it ends here
        os._exit(70)  # EX_SOFTWARE; nothing is flushed, so nothing is written twice


def _said(e: BaseException) -> str:
    text = str(e)
    return f": {text[:300]}" if text else ""


def _where(e: BaseException) -> str:
    """`` at file:line`` of the innermost frame of the traceback (the metric's own code)."""
    import traceback

    frames = traceback.extract_tb(e.__traceback__)
    return f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""


def score(
    candidates: Sequence[str],
    references: Sequence[Sequence[str]],
    metrics: Sequence[str] | None = None,
    *,
    tokenizer: str = "ptb",
    ids: Sequence | None = None,
    allow_empty: bool = False,
    line_breaks: str = "space",
    options: dict[str, dict[str, Any]] | None = None,
    progress: Callable[[str], None] | None = None,
    on_chunk: Callable[[str, int, int], None] | None = None,
    images: Sequence[str] | None = None,
    normalize: str | None = None,
    plan: ScoringPlan | None = None,
) -> Result:
    """Score candidates against their references.

    Parameters
    ----------
    candidates : list of str
        One caption per scoring unit.
    references : list of list of str
        References for each candidate (at least one each).
    metrics : list of str, or str, optional
        Output names (``bleu1``..``bleu4``, ``meteor``, ``rouge_l``, ``cider_d``, ``cider``,
        ``ter``, ...), or one string holding a name or a comma-separated list (``"bleu4"``,
        ``"bleu4,cider_d"``); a set name (``coco``, ``ngram``) stands for its metrics.
        Default: the coco set. ``capeval.list_metrics()`` lists them all.
        An entry may also be your own metric: a :class:`capeval.UserMetric` subclass (or
        instance) or a callable ``fn(candidates, references, images) -> floats``; its name
        is its output name in the result.
    tokenizer : {"ptb", "ptb-java", "ptb-batch", "none"}
        Applied to candidates and references before n-gram metrics, as pycocoevalcap does.
        Model-based metrics receive the raw text.
    ids : list, optional
        Item ids, used in error messages and checked for duplicates.
    allow_empty : bool
        Score empty or blank candidates and references as pycocoevalcap does (an empty
        candidate scores 0; an empty reference matches nothing) instead of raising.
    line_breaks : {"space", "refuse"}
        ``"space"`` (default): every line-break character (``\\n \\r`` VT FF U+001C-1E U+0085
        U+2028 U+2029) in a candidate or reference is read as a space, for every metric; this
        equals pycocoevalcap for ``\\n``. When a scored text held one, the signatures' ``tok``
        field ends in ``+breaks=space``. ``"refuse"`` (strict): raise naming the item.
    options : dict, optional
        Per-family constructor options, e.g. ``{"cider_d": {"df": "path/to/df.json"}}``.
    progress : callable, optional
        Called with a family name before it runs.
    on_chunk : callable, optional
        ``on_chunk(family, done, total)`` as a family advances through its units: once with
        ``done=0`` before it starts, after every chunk of the long-running families (BERTScore
        batches, SPICE parse batches; see :mod:`capeval.progress`), and with ``done == total``
        when it ends. The CLI drives its progress bar and ETA with it.
    images : list of str, optional
        One image file per candidate (checked to exist). Image-based metrics (``needs_images``)
        refuse to run without them; user metrics receive them (or None).
    normalize : {None, "nfc"}
        None (default, as pycocoevalcap): texts are compared as given, code point by code
        point, and a warning says when they mix composed (NFC) and decomposed (NFD) Unicode.
        ``"nfc"``: compose every text first; the signatures' ``tok`` field ends in ``+norm=nfc``.
    plan : ScoringPlan, optional
        The metrics, options and tokenizer resolved once (:meth:`capeval.ScoringPlan.build`),
        for a caller that scores several times with them; then ``options`` is not given, and
        ``metrics``, if given, picks some of the plan's metrics. A plan with scores files is
        scored by ``capeval.service.score_units``.

    Returns
    -------
    Result
        ``.corpus[name]``, ``.per_caption[name]`` (input order) and ``.signatures[name]``.
    """
    # The default set adapts to the input (a family that cannot score it is skipped, with the
    # reason in details["skipped"]); metrics the caller names are all scored or the call fails.
    plan = as_plan(metrics, plan, tokenizer=tokenizer, options=options)
    return _run(plan, candidates, references, ids=ids, allow_empty=allow_empty, line_breaks=line_breaks,
                progress=progress, on_chunk=on_chunk, images=images, normalize=normalize)


def score_statistics(candidates: Sequence[str], references: Sequence[Sequence[str]], *, plan: ScoringPlan,
                     tokens: tuple[list[str], list[list[str]]] | None = None, ids: Sequence | None = None,
                     allow_empty: bool = False, line_breaks: str = "space",
                     images: Sequence[str] | None = None) -> tuple[Result, dict[str, Statistics]]:
    """:func:`score` of ``plan`` through each family's statistics (``Metric.statistics``): the
    Result of these rows and family -> their :class:`~capeval.metrics.statistics.Statistics`,
    for a caller that merges parts (a streamed run's chunks, the torchmetrics metrics' batches
    and ranks). ``tokens``: the validated texts already tokenized by the plan's tokenizer
    (``tokenize_corpus``), as a streamed run has them from its first pass; not checked against
    the texts."""
    statistics: dict[str, Statistics] = {}
    res = _run(plan, candidates, references, ids=ids, allow_empty=allow_empty, line_breaks=line_breaks,
               images=images, tokens=tokens, statistics=statistics)
    return res, statistics


def _run(plan: ScoringPlan, candidates, references, *, ids, allow_empty, line_breaks, images, progress=None,
         on_chunk=None, normalize=None, tokens=None, statistics: dict | None = None) -> Result:
    """The families of ``plan`` scored in turn, each as a streamed run scores a chunk: its corpus
    pre-pass over these rows, then its statistics given that state, then the scores of its
    Aggregate (the statistics are gathered into ``statistics`` when it is a dict)."""
    if plan.columns:
        raise InputError(f"scores files ({', '.join(c.name for c in plan.columns)}) give one score per unit id; "
                         "score a plan holding them with capeval.service.score_units(..., ids=...)")
    tokenizer = plan.tokenizer
    cands, refs, changed = prepare_texts(candidates, references, need_references=plan.needs_references, ids=ids,
                                         allow_empty=allow_empty, line_breaks=line_breaks, normalize=normalize)
    images = plan.check_requirements(images, len(cands), ids)

    tokenized = None
    if plan.needs_tokens:
        tokenized = tokens if tokens is not None else tokenize_corpus(cands, refs, tokenizer)
    emptied = _emptied_by_tokenizer(cands, refs, tokenized, ids, allow_empty, tokenizer)
    tok = tokenizer_id(tokenizer) + changed
    builder = _ResultBuilder(nrefs_field(refs))
    for fam in plan.families:
        cls = fam.cls
        if progress is not None:
            progress(cls.family)
        texts = tokenized if tokenized is not None and cls.text_input == "tokenized" else (cands, refs)
        scored = _score_family(fam, texts, images, plan.defaulted, builder, on_chunk, tokenizer)
        if scored is None:
            continue
        metric, st, out = scored
        if statistics is not None:
            statistics[cls.family] = st
        tok_field = tok if cls.text_input == "tokenized" else "none" + changed
        builder.add(cls, list(fam.names), metric, out, tok_field, fam.options)
    return builder.result(list(plan.metrics), emptied, len(cands))


def _score_family(fam: FamilyPlan, texts, images, defaulted: bool, builder: _ResultBuilder, on_chunk,
                  tokenizer: str):
    """One family over these rows, as a streamed run scores a chunk: built with its options;
    its corpus pre-pass over the rows, and, when it has one, the family built again with that
    state (:meth:`Metric.prepass_options`); its ``Statistics`` and the ``MetricScores`` of its
    Aggregate (taken while the metric is open; the Aggregate's warning, such as texts an encoder
    cut, warned here), reporting its progress. ``(metric, statistics, scores)``, or None when a
    default family cannot score these rows (the reason kept in ``builder.skipped``). The metric
    is closed on the way out."""
    cls, options = fam.cls, fam.options or {}
    metric = _construct(cls, options, fam)
    try:
        if defaulted:
            with contained(fam, "in cannot_score"):
                why = metric.cannot_score(*texts)
            if why is not None:
                builder.skipped.update(dict.fromkeys(fam.names, why))
                return None
        with contained(fam, "in its pre-pass"):
            state = metric.prepass(*texts)
        if state is not None:
            with contained(fam, "while it was closed"):
                metric.close()
            metric = _construct(cls, {**options, **cls.prepass_options(state)}, fam)
        n = len(texts[0])
        chunk = None
        if on_chunk is not None:
            def chunk(done: int, total: int, _family: str = cls.family) -> None:
                on_chunk(_family, done, total)
            chunk(0, n)
        if cls.reuses_scores:
            metric.reuse(builder.shared, tokenizer=tokenizer)
        with reporting(chunk):
            # Only image families see images, so text families keep their two-argument compute.
            seen = {"images": images} if cls.needs_images or cls.accepts_images else {}
            with contained(fam):
                st = metric.statistics(*texts, **seen)
                out = st.scores()
                said = st.aggregate.warning(st)
    finally:
        with contained(fam, "while it was closed"):
            metric.close()
    if chunk is not None:
        chunk(n, n)
    if said is not None:
        import warnings

        warnings.warn(said, stacklevel=4)
    return metric, st, out


class _ResultBuilder:
    """Builds the call's Result from each family's outputs in turn, and keeps the scores later
    families may reuse."""

    def __init__(self, nrefs: str):
        self.nrefs = nrefs
        self.corpus: dict[str, float] = {}
        self.per_caption: dict[str, np.ndarray] = {}
        self.signatures: dict[str, str] = {}
        self.details: dict[str, Any] = {}
        self.skipped: dict[str, str] = {}
        self.shared: dict[str, tuple[np.ndarray, float, str]] = {}

    def add(self, cls, names, metric, out, tok_field: str, family_options) -> None:
        for name in out.per_caption:
            if name not in names and (family_options or name not in shareable_outputs(cls)):
                continue
            sig = metric.signature(name, out.signature_fields, tok=tok_field, nrefs=self.nrefs)
            if name in names:
                self.corpus[name] = float(out.corpus[name])
                self.per_caption[name] = np.asarray(out.per_caption[name], dtype=float)
                self.signatures[name] = sig
            if not family_options:
                self.shared[name] = (np.asarray(out.per_caption[name], dtype=float), float(out.corpus[name]), sig)
        if out.details:
            self.details[cls.family] = out.details

    def result(self, metrics: list[str], emptied: dict[str, int], n: int) -> Result:
        details = self.details
        if emptied:
            details["input"] = {"empty_after_tokenization": emptied}
        if self.skipped:
            import warnings

            details["skipped"] = self.skipped
            warnings.warn("default metrics skipped: " + " ".join(dict.fromkeys(self.skipped.values())),
                          stacklevel=4)
            metrics = [m for m in metrics if m not in self.skipped]
        # Keep the user's order.
        return Result(corpus={m: self.corpus[m] for m in metrics},
                      per_caption={m: self.per_caption[m] for m in metrics},
                      signatures={m: self.signatures[m] for m in metrics}, n=n, details=details)
