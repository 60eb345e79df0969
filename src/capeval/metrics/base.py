"""The small base every metric family implements.

A *family* (``bleu``) computes one or more *outputs* (``bleu1``..``bleu4``) in one pass;
``capeval.score`` groups requested output names by family so shared work happens once.
Subclasses keep sufficient statistics apart from scoring, read no files and print nothing.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from ..result import MetricScores


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
    corpus_dependent : bool
        True when a caption's score depends on the other captions scored with it (CIDEr's df).
    """

    family: ClassVar[str]
    variant: ClassVar[str]
    outputs: ClassVar[tuple[OutputInfo, ...]]
    text_input: ClassVar[Literal["tokenized", "raw"]] = "tokenized"
    corpus_dependent: ClassVar[bool] = False

    @abstractmethod
    def compute(
        self, candidates: Sequence[str], references: Sequence[Sequence[str]]
    ) -> MetricScores:
        """Score aligned candidates and reference lists (already validated)."""

    def close(self) -> None:
        """Release external resources (subprocesses, models). Safe to call twice."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @classmethod
    def output_names(cls) -> tuple[str, ...]:
        return tuple(o.name for o in cls.outputs)
