"""The small base every metric family implements.

A *family* (``bleu``) computes one or more *outputs* (``bleu1``..``bleu4``) in one pass;
``capeval.score`` groups requested output names by family so shared work happens once.
Subclasses keep sufficient statistics apart from scoring and print nothing. ``compute`` reads
no files: what a family needs (a model, a resource, CIDEr's df file) is loaded at construction,
and an output a user asked for (CIDEr's ``save_df``) is written through a format module
(:mod:`capeval.dffile`).
"""
from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..result import MetricScores
from ..signature import signature_line
from .statistics import Aggregate, RowMean, Statistics, from_scores


@dataclass(frozen=True)
class OutputInfo:
    """One score a metric family emits."""

    name: str
    family: str
    variant: str
    range: tuple[float, float]
    higher_is_better: bool = True
    description: str = ""
    citation: str = ""
    #: Non-empty when NaN is a *defined* value of this output, saying when it occurs (SPICE's
    #: category F-scores are NaN when the references have no tuple of the category). NaN stays
    #: an error for every other output; benchmarks skip such rows and name that in the signature.
    undefined: str = ""


class Metric(ABC):
    """Base class.

    Class attributes
    ----------------
    family : str
        Registry key of the family (``"bleu"``).
    variant : str
        Exact variant name stamped in signatures (``"bleu_coco"``). Two different
        computations never share a variant name.
    outputs : tuple[OutputInfo, ...]
        Scores produced by :meth:`compute`.
    text_input : {"tokenized", "raw"}
        ``"tokenized"``: receives PTB-tokenized (or user-chosen tokenizer) text, as
        pycocoevalcap does. ``"raw"``: receives the validated original text (model metrics).
    reuses_scores : bool
        Derived, not declared: True for a family that writes :meth:`reuse` (``learned``, built on
        other metrics' scores): ``capeval.score`` runs it last and hands it the scores already
        computed in that call.
    streamable : bool
        True (the default) when ``capeval.score_stream`` may score this family chunk by chunk
        through its statistics (:meth:`statistics`) with the same numbers: a row's statistics
        depend only on that row and the pre-pass state (:meth:`prepass`). False for a family
        whose rows depend on the whole input in a way it has no pre-pass for; one whose
        options decide it says so in :meth:`cannot_stream`.
    uses_df : bool
        True for a family that takes a document-frequency table (options ``df`` and
        ``save_df``: CIDEr, CIDEr-D): a streamed run counts it over the whole input first and
        hands it to every chunk, and ``capeval score --cider-df`` passes its file.
    is_learned : bool
        Derived, not declared: True for a family that writes :meth:`provenance` (a model trained
        on human judgments: ``learned``, ``nneval``, ``polos``), which names what the model saw;
        benchmark runs refuse or mark its numbers on those benchmarks.
    needs_images : bool
        True for image-based families (CLIP-S, PAC-S): ``capeval.score`` refuses to run them
        without ``images`` (one image path per candidate) and passes those paths to
        :meth:`compute` as the keyword ``images``. Text families never receive it.
    needs_references : bool
        False for reference-free families (CLIP-S, PAC-S): they may run on benchmark splits
        that ship no references.
    accepts_images : bool
        True for a family that reads images when a call has them and runs without them too
        (user metrics): :meth:`compute` then always receives ``images`` (paths, or None).
    extras : tuple of str
        The pip extras of capeval whose modules this family imports (``capeval.extras``):
        ``capeval.score`` names every missing one before any work; ``capeval metrics`` lists them.
    cacheable : bool
        False when nothing identifies the computation across processes (a user's Python
        callable): the score cache neither reads nor stores its numbers.
    pairwise : bool
        True for a family that judges pairs of captions (``pairjudge``): its corpus is a pairwise
        benchmark's units (every pair's A member, then the B members), so benchmark runs refuse
        it on other kinds of table and ``capeval score`` refuses it.
    jobs_option : str or None
        The option that sets this family's own worker processes (SPICE-py's ``n_process``):
        ``capeval score`` names it (``-O family.option=N``) when it refuses ``--jobs N`` on a run
        that cannot stream, since ``--jobs`` never silently means something else in memory.

    Callers ask these attributes and the optional hooks below (all with neutral defaults),
    never ``hasattr``.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Capabilities that follow from the hooks a family writes are derived from them; a
        # family that declares one anyway must agree with its hooks.
        derived = {"reuses_scores": cls.reuse is not Metric.reuse,
                   "is_learned": cls.provenance.__func__ is not Metric.provenance.__func__}  # type: ignore[attr-defined]
        for name, value in derived.items():
            declared = cls.__dict__.get(name)
            if declared is not None and bool(declared) != value:
                hook = "reuse" if name == "reuses_scores" else "provenance"
                raise TypeError(f"{cls.__qualname__}: {name} is derived from whether the family writes "
                                f"{hook}(); it writes {'it' if value else 'none'}, so {name}={declared!r} "
                                "cannot hold")
            setattr(cls, name, value)

    family: ClassVar[str]
    variant: ClassVar[str]
    outputs: ClassVar[tuple[OutputInfo, ...]]
    text_input: ClassVar[Literal["tokenized", "raw"]] = "tokenized"
    reuses_scores: ClassVar[bool] = False
    streamable: ClassVar[bool] = True
    uses_df: ClassVar[bool] = False
    is_learned: ClassVar[bool] = False
    needs_images: ClassVar[bool] = False
    needs_references: ClassVar[bool] = True
    accepts_images: ClassVar[bool] = False
    cacheable: ClassVar[bool] = True
    pairwise: ClassVar[bool] = False
    jobs_option: ClassVar[str | None] = None
    extras: ClassVar[tuple[str, ...]] = ()
    #: Bumped when this family's numbers change while neither its signature nor its code does
    #: (code changes reach the score-cache keys by themselves: capeval.service.codehash, which
    #: also follows :meth:`reads`), so entries stored before are recomputed.
    cache_revision: ClassVar[int] = 0
    #: Registered resources (``capeval models list``) whose files this family's numbers may
    #: depend on. Their state (path, size, mtime) is part of its score-cache keys, so replacing
    #: one of them misses, while installing an unrelated one (another encoder) keeps the entries.
    #: ``None`` means every registered resource: the safe default, kept by the families built on
    #: other metrics (``learned``, ``nneval``, QACE).
    cache_resources: ClassVar[tuple[str, ...] | None] = None

    def compute(
        self, candidates: Sequence[str], references: Sequence[Sequence[str]]
    ) -> MetricScores:
        """Score aligned candidates and reference lists (already validated), for a caller that
        holds the instance; ``capeval.score`` itself always goes through :meth:`statistics`.
        Default: the scores of :meth:`statistics` through its
        :class:`~capeval.metrics.statistics.Aggregate`, so a family with statistics of its own
        declares only those; every other family declares ``compute``."""
        if type(self).statistics is Metric.statistics:
            raise NotImplementedError(f"metric family {self.family!r} declares neither compute nor statistics")
        return self.statistics(candidates, references).scores()

    # -- the statistics contract (capeval.metrics.statistics) ---------------------------------
    def prepass(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> Any | None:
        """(a) This batch's part of the corpus pre-pass state, or None when this instance's rows
        need none (the default; CIDEr with a df file; BERTScore without idf). Parts merge with
        ``+``, associatively. An empty batch gives the neutral state (a streamed run asks it
        once, to learn whether this instance has a pre-pass)."""
        return None

    @classmethod
    def prepass_options(cls, state: Any) -> dict[str, Any]:
        """The options that make an instance score with ``state``, the merged pre-pass state of
        the whole input. Derived for a family with :attr:`uses_df` (its state is CIDEr's df:
        ``{"df": state}``); another family with a pre-pass says (BERTScore: ``{"idf": state}``)."""
        if cls.uses_df:
            return {"df": state}
        raise NotImplementedError(f"{cls.family} has no corpus pre-pass")

    def statistics(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
                   **kw: Any) -> Statistics:
        """(b) Per-row sufficient statistics of a batch, given the pre-pass state this instance
        was built with. Default: the per-row values of :meth:`compute` (keyword ``images`` as
        there) and its details, with :meth:`aggregate`'s rule (the mean). A streamable family on
        the default rule whose corpus score is not the mean of its per-caption scores is an error
        naming it (merged chunks would otherwise give another number than the whole input); one
        that never streams keeps the corpus scores it computed (:class:`AsComputed`)."""
        out = self.compute(candidates, references, **kw)
        default_rule = type(self).aggregate is Metric.aggregate
        return from_scores(out, len(candidates), self.aggregate(tuple(out.per_caption)),
                           checked_for=(self.family, self.streamable) if default_rule else None)

    def aggregate(self, outputs: tuple[str, ...]) -> Aggregate:
        """(c) How this instance's scores follow from the per-row values of :meth:`statistics`'
        default: per-caption = the values, corpus = their mean. A family with another corpus
        rule returns its own :class:`~capeval.metrics.statistics.Aggregate` here, or, when it
        writes :meth:`statistics` itself, puts it in the statistics it returns (BLEU, TER)."""
        return RowMean(outputs)

    @classmethod
    def cannot_stream(cls, options: dict) -> str | None:
        """Why this family with ``options`` cannot be scored chunk by chunk with unchanged
        numbers, or None when it can (see :attr:`streamable`)."""
        if cls.streamable:
            return None
        return f"{cls.family}'s per-row scores depend on the whole input, and it has no pre-pass for that yet"

    def reuse(self, shared: dict, *, tokenizer: str) -> None:
        """Scores computed earlier in the same ``capeval.score`` call, name -> (per-caption,
        corpus, signature) (families with ``reuses_scores`` only)."""

    @classmethod
    def cache_token(cls, options: dict) -> str | None:
        """A digest of whatever file the numbers depend on beyond the options (a learned
        model's weights), for score-cache keys; None when there is none."""
        return None

    @classmethod
    def resources_for(cls, options: dict) -> tuple[str, ...] | None:
        """The resources of :attr:`cache_resources` that ``options`` select (a family with a
        model option names only the model it loads)."""
        return cls.cache_resources

    @classmethod
    def missing_resources(cls, options: dict) -> str | None:
        """What ``options`` need that is not on this machine, as the resolver's message (with
        its install hint), checked before any family scores; None when nothing is missing or
        the family finds its resources only when it runs."""
        return None

    @classmethod
    def reads(cls, options: dict) -> tuple[str, ...]:
        """Outputs of other families whose scores this family's numbers are built from (a
        learned model's features, SPIDEr's SPICE and CIDEr-D); their code is part of this
        family's score-cache keys."""
        return ()

    @classmethod
    def provenance(cls, options: dict) -> dict | None:
        """What a learned family's model saw (``trained_on``, ``selected_on``...), so benchmark
        runs can refuse to report it on seen data; None for every other family."""
        return None

    def signature(self, output: str, fields: dict, *, tok: str, nrefs: str) -> str:
        """The signature of one output: this instance's variant (SPICE's depends on its
        backend), then output, tokenizer, reference count, the metric's own fields and the
        capeval version (sacrebleu-style ``k:v|...``)."""
        return signature_line(self.variant, out=output, tok=tok, nrefs=nrefs, **fields)

    def cannot_score(self, candidates, references) -> str | None:
        """Why this instance would refuse this set as a whole (CIDEr-D on a single unit with df
        from the scored set), with the fix; None when it can score it. ``capeval.score`` asks
        only for its default metric set, skipping such a family and saying why, instead of
        refusing the call; named metrics still raise from :meth:`compute`."""
        return None

    def close(self) -> None:
        """Release external resources (subprocesses, models). Safe to call twice."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @classmethod
    def output_names(cls) -> tuple[str, ...]:
        return tuple(o.name for o in cls.outputs)
