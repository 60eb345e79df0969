"""Perturbations of paragraphs (detailed captions): one sentence added, dropped, changed,
reordered or repeated, or the tail cut (docs/STRESS.md, *Paragraphs*).

Pure functions of the paragraph, the other items' paragraphs and a seeded generator, as the
caption rules of :mod:`capeval.stress.rules` are; ``paragraph_object_swap`` is the caption rule
``object_swap`` on the whole paragraph's parse, so it changes one head noun of one sentence.
"""
from __future__ import annotations

import re

import numpy as np

from . import rules as R
from .rules import Context, Outcome, Perturbation, Skip

#: A sentence ends at . ! or ? followed by white space (the paragraphs coco-paragraph builds have
#: no other sentence ends; a user's paragraph with "Mr. Smith" is split there too).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def _other_sentence(ctx: Context, rng: np.random.Generator, own: list[str]) -> str | None:
    """A sentence of another item's candidate that this paragraph does not hold."""
    pool = [text for image, text in ctx.donors if text != ctx.text and (ctx.image is None or image != ctx.image)]
    own_set = set(own)
    for _ in range(200):  # rejection sampling, as random_caption
        if not pool:
            return None
        options = [s for s in sentences(R._pick(rng, pool)) if s not in own_set]
        if options:
            return R._pick(rng, options)
    return None


def sentence_insert(ctx: Context, rng: np.random.Generator) -> Outcome:
    """A sentence of another item's paragraph (about another image) inserted after a sentence
    of this one: one hallucinated sentence."""
    own = sentences(ctx.text)
    new = _other_sentence(ctx, rng, own)
    if new is None:
        return Skip("no sentence of another item")
    at = int(rng.integers(1, len(own) + 1))
    return " ".join([*own[:at], new, *own[at:]])


def sentence_drop(ctx: Context, rng: np.random.Generator) -> Outcome:
    """One sentence removed (an omission)."""
    own = sentences(ctx.text)
    if len(own) < 2:
        return Skip("fewer than two sentences")
    k = int(rng.integers(len(own)))
    return " ".join(own[:k] + own[k + 1:])


def sentence_reorder(ctx: Context, rng: np.random.Generator) -> Outcome:
    """The sentences in a random order, never the original one: each sentence of a detailed
    description is about its own part of the picture, and no order is the right one."""
    own = sentences(ctx.text)
    if len(set(own)) < 2:
        return Skip("fewer than two different sentences")
    for _ in range(100):
        new = [own[k] for k in rng.permutation(len(own))]
        if new != own:
            return " ".join(new)
    return Skip("no different order drawn")  # pragma: no cover - 100 failed draws of >= 2 sentences


def sentence_repeat(ctx: Context, rng: np.random.Generator) -> Outcome:
    """One sentence said twice, the copy right after it."""
    own = sentences(ctx.text)
    if not own:
        return Skip("no sentence")
    k = int(rng.integers(len(own)))
    return " ".join(own[:k + 1] + own[k:])


def tail_cut(ctx: Context, rng: np.random.Generator) -> Outcome:
    """The last third of the words removed, mid-sentence, with no final punctuation: a
    description stopped at a generation limit."""
    words = ctx.text.split()
    if len(words) < 3:
        return Skip("fewer than three words")
    return " ".join(words[: len(words) - len(words) // 3]).rstrip(".!?,;:")


PERTURBATIONS: tuple[Perturbation, ...] = (
    Perturbation("sentence_insert", "lower", "a sentence about another image inserted", sentence_insert),
    Perturbation("sentence_drop", "lower", "one sentence removed", sentence_drop),
    Perturbation("paragraph_object_swap", "lower", "one head noun of one sentence replaced by a co-hyponym",
                 R.object_swap),
    Perturbation("sentence_reorder", "same", "the sentences in another order", sentence_reorder),
    Perturbation("sentence_repeat", "not_higher", "one sentence said twice", sentence_repeat),
    Perturbation("tail_cut", "lower", "the last third of the words cut, mid-sentence", tail_cut),
)
