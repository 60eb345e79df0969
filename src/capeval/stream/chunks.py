"""The two chunk functions every engine runs: the df pass and the score pass.

Both are pure functions of their arguments (no files written, nothing printed), picklable for
worker processes and Ray tasks. A chunk is scored by :func:`capeval.score` itself through each
family's statistics (``Metric.statistics``), with CIDEr given the df of the whole input (its
corpus pre-pass), so every per-caption number is the in-memory one: each is a function of its
own row plus the pre-pass state, which the df handle carries. The chunk returns its statistics
reduced to what the corpus scores read (``Statistics.reduced``); the run merges them.

The df pass (the run's first pass) tokenizes the chunk as :func:`capeval.score` does
(validation, then ``tokenize_corpus`` of the validated texts) and can return those tokens, so
that the score pass, given the chunk with them, does not tokenize it again; it also returns the
chunk's pre-pass state of every other family that has one (BERTScore's idf counts), which the
score pass receives merged over the whole input.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from .. import rowfiles
from ..errors import InputError
from ..metrics.statistics import Statistics
from .readers import Chunk
from .store import allow

# Which families stream, and which of them take the corpus df, are their ``Metric.streamable``
# (``Metric.cannot_stream``) and ``Metric.uses_df``.
DEFAULT_CHUNK = rowfiles.DEFAULT_CHUNK


@dataclass(frozen=True)
class Settings:
    metrics: tuple[str, ...]
    tokenizer: str = "ptb"
    allow_empty: bool = False
    line_breaks: str = "space"
    #: Per-family options without the CIDEr ``df`` (given to chunks as a :class:`DfHandle`).
    options: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    output_format: str | None = None     # "jsonl", "csv", "parquet" or None (no fragment)
    #: ``family:version`` of the metrics registered at run time in the calling process (part of
    #: the run's fingerprint), and those classes pickled (by value when pickle cannot name
    #: them), registered in each worker before its first chunk.
    user_ids: tuple[str, ...] = ()
    user_classes: tuple[bytes, ...] = field(default=(), repr=False, compare=False)
    #: Families other than CIDEr's (whose df has its own hashed path) with a corpus pre-pass
    #: (``Metric.prepass``): the first pass computes their state of the whole input, merged with
    #: ``+``, and every chunk's instance gets it through ``Metric.prepass_options``.
    prepassed: tuple[str, ...] = ()

    def options_dict(self) -> dict[str, dict[str, Any]]:
        return {fam: dict(kv) for fam, kv in self.options}


_registered: set[bytes] = set()
_plans: dict[str, Any] = {}


def remember_plan(settings: Settings, plan) -> None:
    """The calling process's plan of ``settings`` (its options without CIDEr's df), so chunks
    scored in this process do not resolve the names again."""
    _plans.clear()
    _plans[repr(settings)] = plan


def settings_plan(settings: Settings):
    """The run's :class:`~capeval.plan.ScoringPlan` in this process (a worker's is built once,
    from the settings, after their run-time metrics are registered), without CIDEr's df and
    the pre-pass states, which each chunk adds."""
    key = repr(settings)  # the run's fingerprint holds the same text
    plan = _plans.get(key)
    if plan is None:
        from ..plan import ScoringPlan

        register_user_classes(settings)
        plan = ScoringPlan.build(list(settings.metrics), tokenizer=settings.tokenizer, options=settings.options_dict())
        _plans.clear()  # one run at a time per process
        _plans[key] = plan
    return plan



def pickle_user_classes(classes) -> tuple[tuple[str, ...], tuple[bytes, ...]]:
    """The families registered at run time in this process (neither built in nor a plug-in),
    pickled for the workers: by reference when pickle can name the class, else by value
    (cloudpickle, as Ray ships functions)."""
    import pickle

    from ..metrics.registry import OUTPUT_MODULES, plugin_origin

    ids, blobs = [], []
    for cls in classes:
        if plugin_origin(cls) is not None or any(o in OUTPUT_MODULES for o in cls.output_names()):
            continue
        try:
            blob = pickle.dumps(cls)
            if pickle.loads(blob) is not cls:  # noqa: S301 - our own bytes
                raise pickle.PicklingError("another class of that name")
        except (pickle.PicklingError, AttributeError, TypeError):
            try:
                import cloudpickle
            except ImportError:
                raise InputError(f"metric {cls.family!r} was defined at run time where pickle cannot name it; "
                                 "define it in an importable module, install cloudpickle, or stream it with "
                                 "jobs=1") from None
            blob = cloudpickle.dumps(cls)
        ids.append(f"{cls.family}:{getattr(cls, 'version', '')}")
        blobs.append(blob)
    return tuple(ids), tuple(blobs)


def register_user_classes(settings: Settings) -> None:
    """Make the caller's run-time metrics known in this process (a worker's registry starts
    with the built-ins and plug-ins only); once per class and process."""
    import pickle

    from ..metrics.registry import register_user

    for blob in settings.user_classes:
        if blob in _registered:
            continue
        cls = pickle.loads(blob)  # noqa: S301 - pickled by the calling process of this run
        register_user(cls)
        _registered.add(blob)


@dataclass(frozen=True)
class DfHandle:
    """Where a chunk finds CIDEr's df: ``hashed`` arrays in a folder (memory-mapped), a saved
    df ``file``, or an in-process ``object``. Resolved once per worker process."""

    kind: str
    ref: Any
    n_units: int = 0


_resolved: dict[tuple, Any] = {}


def resolve_df(h: DfHandle | None):
    if h is None:
        return None
    if h.kind == "object":
        return h.ref
    key = (h.kind, str(h.ref), h.n_units)
    dfo = _resolved.get(key)
    if dfo is None:
        if h.kind == "hashed":  # (keys file, counts file), named by their digest: never rewritten
            from .dfstore import HashedDocumentFrequency

            dfo = HashedDocumentFrequency.load_arrays(h.ref[0], h.ref[1], h.n_units)
        elif h.kind == "arrays":  # (keys, counts) shipped by value (Ray object store)
            from .dfstore import HashedDocumentFrequency

            dfo = HashedDocumentFrequency(h.ref[0], h.ref[1], h.n_units)
            return dfo  # arrays may live in shared memory owned by the task: do not cache
        elif h.kind == "file":
            from ..metrics.cider import DocumentFrequency

            dfo = DocumentFrequency.load(h.ref)
        else:
            raise ValueError(f"unknown df handle {h.kind!r}")
        _resolved.clear()  # one df per run; do not keep an old one alive
        _resolved[key] = dfo
    return dfo


@dataclass(frozen=True)
class StatesHandle:
    """Where a worker process finds the merged pre-pass states: the run folder's saved file
    (:meth:`~capeval.stream.store.RunStore.save_prepass`), read once per process. States grow
    with the input (a learned model's df), so they are not pickled into every chunk's task."""

    path: str
    key: str
    digest: str
    #: The run's secret (the file's HMAC key) and the classes the states may hold
    #: (``module:qualname``, from the calling process, never from the file).
    secret: bytes = field(default=b"", repr=False)
    types: tuple[str, ...] = ()

    def classes(self) -> frozenset[type]:
        import importlib

        out = set()
        for name in self.types:
            module, _, qual = name.partition(":")
            obj: Any = importlib.import_module(module)
            for part in qual.split("."):
                obj = getattr(obj, part)
            out.add(obj)
        return frozenset(out)


_resolved_states: dict[str, dict] = {}


def resolve_states(states: StatesHandle | dict | None) -> dict | None:
    if not isinstance(states, StatesHandle):
        return states
    got = _resolved_states.get(states.digest)
    if got is None:
        from .store import load_saved

        # HMAC-checked with the run's secret, keyed by run and input, no pickle
        saved = load_saved(states.path, states.key, "prepass", states.secret, states.classes())
        if saved is None:
            raise InputError(f"the run folder's pre-pass states ({states.path}) changed or vanished during the "
                             "run; run it again")
        _resolved_states.clear()  # one run's states at a time
        got = _resolved_states[states.digest] = saved[0]
    return got


def _in_chunk(e: InputError, chunk: Chunk) -> InputError:
    if chunk.index == 0 and chunk.start == 0:
        return e
    return InputError(f"{e} [in input rows {chunk.start}-{chunk.start + len(chunk) - 1}; item numbers "
                      "above count from the first of them]")


class FirstPass(NamedTuple):
    """One chunk's part of the first pass (:func:`df_pass`)."""

    keys: Any     # CIDEr's hashed reference n-gram df of the chunk (None when not counted)
    counts: Any
    n: int
    tokens: tuple[list[str], list[list[str]]] | None  # the chunk's tokenize_corpus, when kept
    states: dict[str, Any]  # family -> the chunk's pre-pass state (Settings.prepassed)


def df_pass(chunk: Chunk, settings: Settings, keep_tokens: bool = False, count_df: bool = True) -> FirstPass:
    """Validate the chunk; count its reference n-grams (``count_df``: CIDEr's df) and compute
    the pre-pass state of each family of ``settings.prepassed``; with ``keep_tokens``, keep the
    chunk's ``tokenize_corpus`` when a requested family reads tokens."""
    from ..text import tokenize_corpus
    from ..validation import validate_corpus
    from .dfstore import chunk_df

    plan = settings_plan(settings)
    try:
        cands, refs = validate_corpus(chunk.cands, chunk.refs, ids=chunk.ids, allow_empty=settings.allow_empty,
                                      line_breaks=settings.line_breaks)
    except InputError as e:
        raise _in_chunk(e, chunk) from None
    tokens = None
    if keep_tokens and plan.needs_tokens:
        # exactly as capeval.score tokenizes the chunk (same validated texts, same call)
        tokens = tokenize_corpus(cands, refs, settings.tokenizer)
    keys = counts = None
    if count_df:
        keys, counts = chunk_df(tokens[1] if tokens is not None else tokenize_corpus([], refs, settings.tokenizer)[1])
    try:
        states = _prepass_states(settings, cands, refs, tokens)
    except InputError as e:
        raise _in_chunk(e, chunk) from None
    return FirstPass(keys, counts, len(chunk), tokens, states)


def prepassed(groups, options: dict[str, dict]) -> tuple[str, ...]:
    """The families other than CIDEr's (whose df has its own hashed path) whose instance with
    these options has a corpus pre-pass: its state of an empty batch is not None (BERTScore
    with idf; a df file or idf off: None)."""
    from ..api import contained, instantiate
    from ..metrics.base import Metric
    from ..plan import empty_prepass

    out = []
    for cls in groups:
        if cls.uses_df or cls.prepass is Metric.prepass:
            continue
        with instantiate(cls, options.get(cls.family) or {}) as metric, contained(cls.family, "in its pre-pass"):
            empty = empty_prepass(metric)
        if empty is not None:
            out.append(cls.family)
            # the run folder rebuilds a saved state only of this class (no pickle)
            allow("prepass", type(empty))
            allow("prepassck", type(empty))
    return tuple(sorted(out))


def _prepass_states(settings: Settings, cands, refs, tokens) -> dict[str, Any]:
    """Each pre-passed family's state of these validated rows, from the texts it reads in
    :func:`capeval.score` (tokenized or raw)."""
    from ..api import contained, instantiate
    from ..text import tokenize_corpus

    options = settings.options_dict()
    states: dict[str, Any] = {}
    classes = {f.family: f.cls for f in settings_plan(settings).families}
    for fam in settings.prepassed:
        cls = classes[fam]
        texts = (cands, refs)
        if cls.text_input == "tokenized":
            if tokens is None:
                tokens = tokenize_corpus(cands, refs, settings.tokenizer)
            texts = tokens
        with instantiate(cls, options.get(fam) or {}) as metric, contained(fam, "in its pre-pass"):
            states[fam] = metric.prepass(*texts)
    return states


@dataclass
class ChunkResult:
    index: int
    n: int
    per_caption: dict[str, np.ndarray]
    signatures: dict[str, str]
    #: family -> the chunk's statistics, reduced to what the corpus scores read
    stats: dict[str, Statistics]
    nrefs: frozenset[int]
    line_break: bool
    emptied: dict[str, int]
    ids: list | None
    fragment: bytes = b""
    extra: dict[str, Any] = field(default_factory=dict)


# What a chunk file of the run folder may hold (with the families' Aggregates).
allow("chunk", ChunkResult, Statistics)


def score_pass(chunk: Chunk, settings: Settings, df: DfHandle | None,
               states: dict[str, Any] | None = None) -> ChunkResult:
    """Score one chunk with :func:`capeval.score` through the families' statistics (CIDEr with
    the corpus df of ``df``, each family of ``states`` with its pre-pass state of the whole
    input)."""
    from ..api import score_statistics
    from ..metrics._ngrams import clear_cache
    from ..rowfiles import fragment
    from ..validation import form_counts, has_line_break

    plan = settings_plan(settings)
    classes = {f.family: f.cls for f in plan.families}
    options = settings.options_dict()
    dfo = resolve_df(df)
    if dfo is not None:
        for cls in classes.values():
            if cls.uses_df:
                options.setdefault(cls.family, {})["df"] = dfo
    for fam, state in (resolve_states(states) or {}).items():
        options.setdefault(fam, {}).update(classes[fam].prepass_options(state))
    if dfo is not None or states:
        plan = plan.with_options(options)
    # The n-gram index cache holds the last calls' indexes: drop them so memory stays flat.
    clear_cache()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the stream warns once, with totals
            res, statistics = score_statistics(chunk.cands, chunk.refs, plan=plan, tokens=chunk.tokens, ids=chunk.ids,
                                               allow_empty=settings.allow_empty, line_breaks=settings.line_breaks,
                                               images=chunk.images)
    except InputError as e:
        raise _in_chunk(e, chunk) from None
    finally:
        clear_cache()
    out = ChunkResult(
        index=chunk.index,
        n=len(chunk),
        per_caption={k: np.asarray(v, dtype=np.float64) for k, v in res.per_caption.items()},
        signatures=dict(res.signatures),
        stats={fam: st.reduced() for fam, st in statistics.items()},
        nrefs=frozenset(len(r) for r in chunk.refs),
        line_break=settings.line_breaks == "space" and has_line_break(chunk.cands, chunk.refs),
        emptied=dict(res.details.get("input", {}).get("empty_after_tokenization", {})),
        ids=chunk.ids,
        extra={"unicode_forms": form_counts(chunk.cands, chunk.refs)},  # warned about once, in total
    )
    if settings.output_format is not None:
        ids = chunk.ids if chunk.ids is not None else list(range(chunk.start, chunk.start + len(chunk)))
        out.fragment = fragment(settings.output_format, ids, out.per_caption)
    return out
