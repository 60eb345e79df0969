"""Offline question answering over a context's scene graph (variant ``scenegraph``).

Not the paper's T5 reader. A context (one reference, or all of them merged) is parsed into
SPICE-style tuples by :mod:`capeval.scenegraph` (objects, (object, attribute),
(subject, relation, object); lemmas). A question's slot is answered by the context's filler of the
same slot; words of the slot match when their lemmas are equal, they share a WordNet 3.0 synset
or, when word vectors are given, their cosine reaches a threshold. No filler -> unanswerable.

When several fillers fit (two references both say what the man rides, or a merged context), the
reader returns the one closest to the candidate's answer by token F1 (first on ties): a reader
asked "what is the man riding?" over "a man rides a horse and a cow" may give either.
A noun filler is returned with its attributes, counts first ("two black dog").
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..scenegraph.graph import COMMON_COLORS, SIZE_ADJECTIVES, SMALL_NUMBERS
from .similarity import token_f1
from .types import Answer, Question


class WordMatcher:
    """``same(a, b)``: equal lemmas, a shared WordNet synset, or vector cosine >= threshold."""

    def __init__(self, synsets: Callable[[str], frozenset] | None = None, vectors=None,
                 threshold: float = 0.8):
        self._synsets = synsets
        self._vectors = vectors
        self.threshold = threshold
        self._cache: dict[tuple[str, str], bool] = {}

    def _cos(self, a: str, b: str) -> float:
        v = self._vectors
        if v is None or a not in v or b not in v:
            return -1.0
        m = v.vectors([a, b], norm=True)
        return float(m[0] @ m[1])

    def same(self, a: str, b: str) -> bool:
        if a == b:
            return True
        if not a or not b:
            return False
        key = (a, b) if a < b else (b, a)
        hit = self._cache.get(key)
        if hit is None:
            hit = False
            if self._synsets is not None and (self._synsets(a) & self._synsets(b)):
                hit = True
            elif self._vectors is not None and " " not in a and " " not in b:
                hit = self._cos(a, b) >= self.threshold
            self._cache[key] = hit
        return hit

    def same_predicate(self, a: str, b: str) -> bool:
        """Predicates ("ride on"): whole phrases match, or first words match with equal rest."""
        if self.same(a, b):
            return True
        ha, _, ta = a.partition(" ")
        hb, _, tb = b.partition(" ")
        return ta == tb and bool(ha) and self.same(ha, hb)


@dataclass
class Context:
    """Tuples of one context, indexed by kind."""

    objects: list[str] = field(default_factory=list)
    attributes: dict[str, list[str]] = field(default_factory=dict)
    relations: list[tuple[str, str, str]] = field(default_factory=list)

    @classmethod
    def from_tuples(cls, tuples: Sequence[Sequence[str]]) -> "Context":
        ctx = cls()
        for t in tuples:
            if len(t) == 1:
                if t[0] not in ctx.objects:
                    ctx.objects.append(t[0])
            elif len(t) == 2:
                attrs = ctx.attributes.setdefault(t[0], [])
                if t[1] not in attrs:
                    attrs.append(t[1])
                if t[0] not in ctx.objects:
                    ctx.objects.append(t[0])
            elif len(t) == 3:
                ctx.relations.append((t[0], t[1], t[2]))
                for o in (t[0], t[2]):
                    if o not in ctx.objects:
                        ctx.objects.append(o)
        return ctx

    def describe(self, noun: str) -> str:
        """A noun with its attributes, counts first: the text a reader would answer with."""
        attrs = self.attributes.get(noun, [])
        counts = [a for a in attrs if a in SMALL_NUMBERS]
        rest = [a for a in attrs if a not in SMALL_NUMBERS]
        return " ".join(counts + rest + [noun])


def _type_of(attr: str) -> str:
    if attr in COMMON_COLORS:
        return "color"
    if attr in SIZE_ADJECTIVES:
        return "size"
    if attr in SMALL_NUMBERS:
        return "count"
    return "kind"


class SceneGraphReader:
    """Answers :class:`Question` slots from a :class:`Context`."""

    def __init__(self, matcher: WordMatcher):
        self.m = matcher

    def _pick(self, fillers: list[str], candidate: str) -> str:
        best, best_f = "", -1.0
        for f in dict.fromkeys(fillers):
            s = token_f1(candidate, f)
            if s > best_f:
                best, best_f = f, s
        return best

    def _objects_like(self, ctx: Context, noun: str) -> list[str]:
        return [o for o in ctx.objects if self.m.same(o, noun)]

    def _entity(self, q: Question, ctx: Context) -> list[str]:
        kind = q.slot[0]
        m = self.m
        if kind == "subject":
            _, pred, obj = q.slot
            if obj:
                hits = [s for s, p, o in ctx.relations if m.same_predicate(p, pred) and m.same(o, obj)]
            else:
                hits = [o for o, attrs in ctx.attributes.items() for a in attrs if m.same(a, pred)]
                hits += [s for s, p, _ in ctx.relations if m.same_predicate(p.split(" ")[0], pred)]
            if hits:
                return [ctx.describe(s) for s in hits]
        elif kind == "object":
            _, subj, pred = q.slot
            hits = [o for s, p, o in ctx.relations if m.same(s, subj) and m.same_predicate(p, pred)]
            if not hits:  # the reader still answers from the predicate alone ("riding what?")
                hits = [o for s, p, o in ctx.relations if m.same_predicate(p, pred)]
            if hits:
                return [ctx.describe(o) for o in hits]
        # No slot filler: does the context mention the thing at all?
        head = q.answer.split(" ")[-1]
        return [ctx.describe(o) for o in self._objects_like(ctx, head)]

    def answer(self, q: Question, ctx: Context) -> Answer:
        kind = q.slot[0] if q.slot else "exists"
        if kind in ("count", "attribute"):
            noun = q.slot[1]
            want = "count" if kind == "count" else q.slot[2]
            fillers = [a for o in self._objects_like(ctx, noun) for a in ctx.attributes.get(o, [])
                       if _type_of(a) == want and a not in ctx.objects]
        else:
            fillers = self._entity(q, ctx)
        text = self._pick(fillers, q.answer)
        return Answer(text, 1.0 if text else 0.0)
