"""Human judgments as training material for learned metrics, with an explicit leave-out rule.

Every benchmark becomes a :class:`Judgments`: distinct scoring units (candidate + references),
the canonical image of each unit, and the human signal in one of two shapes:

* caption ratings (Flickr8k-Expert, Flickr8k-CF, COMPOSITE, the Tanti 200-image study): one
  mean rating per distinct unit; the stacked judge rows of Expert are averaged per unit;
* preferences (PASCAL-50S, ABSTRACT-50S): pairs of units with label 0 (a preferred), 1 (b)
  or 0.5 (human tie).

:func:`overlap_mask` marks in a training benchmark every unit that shares an image or a
candidate text with a held-out benchmark (the protocol drops them: ``lobo.training_blocks``).
Flickr8k-Expert and Flickr8k-CF rate the same 1,000 images with largely the same candidate
sentences, and COMPOSITE holds Flickr8k and COCO test images, so holding a benchmark out by
name alone would leak it back in.

No scoring and no file access beyond the loaders (``capeval.data``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from .builder import canonical_image

#: Human-judgment benchmarks a learned model may be trained and evaluated on, with the
#: headline statistic each is reported with.
JUDGMENT_BENCHMARKS: dict[str, str] = {
    "flickr8k-expert": "kendall_tau_c",
    "flickr8k-cf": "kendall_tau_b",
    "composite": "kendall_tau_c",
    "pascal50s": "accuracy",
    "abstract50s": "accuracy",
    "tanti-human200": "kendall_tau_b",
}

#: Evaluation sets of recent metric papers (THumB, Nebula, Polaris), with their headline
#: statistic. No learned model trains on them, nor is a default chosen on them, unless asked
#: (``allow_eval_sets``, ``capeval train learned --allow-eval-sets``); a model that did is seen
#: on them (its ``trained_on``), and ``capeval bench`` refuses or marks its numbers there.
EVALUATION_SETS: dict[str, str] = {
    "thumb": "pearson",
    "nebula": "kendall_tau_c",
    "polaris": "kendall_tau_c",
}

#: Training-only sources: comparisons a learned model may learn from but that are never held
#: out or reported as a human-judgment result. ``distractors-train`` is the distractor tasks
#: (docs/DISTRACTORS.md) rebuilt on Flickr8k *training* images (the first ``limit`` in sorted
#: order): the correct caption must beat its distractor. Value: the loader options.
TRAINING_ONLY: dict[str, dict[str, object]] = {
    "distractors-train": {"datasets": "flickr8k", "split": "train", "limit": 1000},
}


@dataclass
class Judgments:
    """One benchmark's distinct units and its human signal (see module docstring)."""

    name: str
    kind: str  # "rating" | "preference"
    candidates: list[str]
    references: list[list[str]]
    images: list[str]  # canonical image id per unit
    ratings: np.ndarray | None = None  # per unit, kind == "rating"
    pairs: np.ndarray | None = None  # (n, 2) unit indices, kind == "preference"
    labels: np.ndarray | None = None  # per pair: 0 → a preferred, 1 → b, 0.5 tie
    table: object = field(default=None, repr=False)  # the loaded benchmark table (for evaluation)
    unit_of_row: np.ndarray | None = field(default=None, repr=False)  # table row → unit (ratings)
    #: image file name per unit (the loader's ``images``; None where it records none), for
    #: features that read images (``capeval train learned --images DIR``)
    image_files: list[str | None] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.candidates)


def _key(cand: str, refs: Sequence[str]) -> tuple:
    return (cand, tuple(refs))


def _row_images(name: str, table) -> list[str]:
    if name == "pascal50s":
        return [canonical_image(i, "voc") for i in table.extra["image"]]
    if name == "abstract50s":
        # Abstract scenes appear in no other benchmark; one pseudo-image per pair keeps them apart.
        return [f"abstract:{int(i)}" for i in table.extra.get("pair_index", range(len(table)))]
    if name == "composite":
        return [canonical_image(g, "coco" if g.startswith("coco/") else "flickr") for g in table.groups]
    if name == "tanti-human200":
        return [canonical_image(g, "coco") for g in table.groups]
    if name == "thumb":
        return [canonical_image(img, "coco") for img in table.images]
    if name in EVALUATION_SETS:
        # Nebula and Polaris images have ids of their own: a namespace per set keeps them apart.
        return [f"{name}:{img.rsplit('.', 1)[0]}" for img in table.images]
    if name == "distractors-train":
        return [canonical_image(it.image, "flickr") for it in table.extra["items"]]
    return [canonical_image(g, "flickr") for g in table.groups]


def from_table(name: str, table) -> Judgments:
    """Distinct units of a loaded benchmark table with their human signal."""
    from ..data import CorrelationTable, PairwiseTable

    images = _row_images(name, table)
    row_files = list(table.images) if getattr(table, "images", None) is not None else [None] * len(table)
    index: dict[tuple, int] = {}
    cands: list[str] = []
    refs: list[list[str]] = []
    unit_images: list[str] = []
    unit_files: list[str | None] = []

    def unit(c: str, r: Sequence[str], img: str, file: str | None) -> int:
        k = _key(c, r)
        if k not in index:
            index[k] = len(cands)
            cands.append(c)
            refs.append(list(r))
            unit_images.append(img)
            unit_files.append(file)
        return index[k]

    if isinstance(table, CorrelationTable):
        rows = np.array([unit(c, r, img, f) for c, r, img, f in
                         zip(table.candidates, table.references, images, row_files)])
        sums = np.bincount(rows, weights=table.human, minlength=len(cands))
        counts = np.bincount(rows, minlength=len(cands))
        return Judgments(name, "rating", cands, refs, unit_images, ratings=sums / counts, table=table,
                         unit_of_row=rows, image_files=unit_files)
    if isinstance(table, PairwiseTable):
        pairs = np.array([(unit(a, r, img, f), unit(b, r, img, f)) for a, b, r, img, f in
                          zip(table.candidates_a, table.candidates_b, table.references, images, row_files)],
                         dtype=int)
        return Judgments(name, "preference", cands, refs, unit_images, pairs=pairs,
                         labels=np.asarray(table.labels, dtype=float), table=table, image_files=unit_files)
    raise InputError(f"{name}: a learned model needs caption ratings or preferences, "
                     f"not a {type(table).__name__}")


def load_judgments(name: str, root=None, *, allow_eval_sets: bool = False, **load_options) -> Judgments:
    """Load benchmark ``name`` (one of :data:`JUDGMENT_BENCHMARKS` or :data:`TRAINING_ONLY`;
    one of :data:`EVALUATION_SETS` only with ``allow_eval_sets``) as :class:`Judgments`."""
    from .. import data

    if name in TRAINING_ONLY:
        return from_table(name, data.load("distractors", root, **{**TRAINING_ONLY[name], **load_options}))
    if name in EVALUATION_SETS and not allow_eval_sets:
        raise InputError(f"{name} is an evaluation set (the benchmarks recent metric papers report): a learned "
                         f"model does not train on it unless asked. Pass allow_eval_sets=True (capeval train "
                         f"learned --allow-eval-sets); capeval bench then treats the model as seen on {name}")
    if name not in JUDGMENT_BENCHMARKS and name not in EVALUATION_SETS:
        raise InputError(f"{name!r} is not a human-judgment benchmark a learned model can use; "
                         f"one of {', '.join([*JUDGMENT_BENCHMARKS, *TRAINING_ONLY])} "
                         f"(or, with --allow-eval-sets, {', '.join(EVALUATION_SETS)})")
    return from_table(name, data.load(name, root, **load_options))


def norm_text(s: str) -> str:
    """Lower-cased, whitespace-collapsed text: how candidate texts are compared for overlap."""
    return " ".join(s.lower().split())


def overlap_mask(train: Judgments, held_out: Sequence[Judgments]) -> np.ndarray:
    """True for each unit of ``train`` that shares an image or a candidate text with any
    held-out benchmark (texts compared lower-cased with whitespace collapsed)."""
    images = set()
    texts = set()
    for h in held_out:
        images.update(h.images)
        texts.update(norm_text(c) for c in h.candidates)
    return touches(train, images, texts)


def touches(train: Judgments, images: set[str], texts: set[str]) -> np.ndarray:
    """True for each unit of ``train`` whose image is in ``images`` or whose normalised
    candidate text is in ``texts`` (as :func:`norm_text` gives them)."""
    return np.array([img in images or norm_text(c) in texts
                     for img, c in zip(train.images, train.candidates)], dtype=bool)
