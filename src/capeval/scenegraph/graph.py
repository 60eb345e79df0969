"""Scene graphs built from proposed tuples, and SPICE's tuple matching and F-scores.

Semantics follow SPICE 1.0 (Anderson et al., ECCV 2016; ``SceneGraph``, ``TupleSet``,
``Evaluation`` in spice-1.0.jar), re-implemented here:

* A *concept* is a set of words plus the union of their WordNet synsets. Two concepts are
  *similar* when they share a word or a synset.
* Adding a tuple to a graph reuses an existing node when its object is equal, else merges it into
  the most similar node (similarity 1 for a shared word, else synset Jaccard; ties keep the
  earlier node), else adds a node. Attributes merge into a similar attribute of the node;
  relations between the same two nodes merge when their predicates are similar.
* A graph's tuples are: each node's object, each (object, attribute), each (subject, relation,
  object). A candidate tuple is a true positive when it is similar, element by element, to any
  reference tuple (reference tuples may be reused, as in SPICE).
* pr = tp/|cand|, re = tp/|ref| (``re`` is SPICE's tp/(tp+fn) with fn = |ref| - tp),
  f = 2·pr·re/(pr+re), 0 unless both are positive. A category is NaN when the references have
  no tuple of it; "all" is never NaN.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

SynsetFn = Callable[[str], frozenset]

# SPICE's TupleFilter word lists: a (object, attribute) tuple is in a category when its attribute
# is exactly one of these words (a merged attribute such as "black/dark" is in none).
SMALL_NUMBERS = frozenset("one two three four five six seven eight nine ten".split())
COMMON_COLORS = frozenset(
    "black brown blue red yellow pink gray grey green dark light white cream orange purple "
    "maroon beige violet".split()
)
SIZE_ADJECTIVES = frozenset(
    """baby illimitable scrawny beefy immeasurable short big immense sizable bony infinitesimal
    skeletal boundless lanky skimpy brawny large skinny broad lean slender bulky life-size slim
    chunky limitless small colossal little squat compact mammoth stocky corpulent massive stout
    cosmic meager strapping cubby measly sturdy curvy microscopic tall elfin mini teensy emaciated
    miniature teeny endless minuscule teeny-tiny enormous minute teeny-weeny epic narrow thick
    expansive obese thickset extensive outsized thin fat oversize tiny fleshy overweight titanic
    full-size paltry towering gargantuan petite trifling gaunt pint-size trim giant plump tubby
    gigantic pocket-size undersized grand portly underweight great pudgy unlimited heavy puny vast
    hefty rotund wee huge scanty whopping hulking scraggy wide""".split()
)

CATEGORIES = ("object", "attribute", "relation", "color", "count", "size")


class Concept:
    """Words and synsets of one graph element; merging replaces them with the unions. Frozen
    sets, so a new concept shares its word's synset set and a snapshot copies nothing."""

    __slots__ = ("words", "synsets")

    def __init__(self, word: str, synsets: frozenset):
        self.words: frozenset[str] = frozenset((word,))
        self.synsets: frozenset = synsets if type(synsets) is frozenset else frozenset(synsets)

    def equals(self, other: "Concept") -> bool:
        return self.words == other.words and self.synsets == other.synsets

    def similar(self, other: "Concept") -> bool:
        return not self.synsets.isdisjoint(other.synsets) or not self.words.isdisjoint(other.words)

    def similarity(self, other: "Concept") -> float:
        if not self.words.isdisjoint(other.words):
            return 1.0
        a, b = self.synsets, other.synsets
        if not a or not b:
            return 0.0
        shared = len(a & b)
        return shared / (len(a) + len(b) - shared)  # |a & b| / |a | b|

    def merge(self, other: "Concept") -> None:
        self.words = self.words | other.words
        self.synsets = self.synsets | other.synsets

    def label(self) -> str:
        return "/".join(sorted(self.words))

    def snapshot(self) -> tuple[frozenset, frozenset]:
        return self.words, self.synsets


@dataclass
class _Node:
    obj: Concept
    attrs: list[Concept] = field(default_factory=list)


@dataclass
class _Relation:
    source: _Node
    target: _Node
    rel: Concept


class SceneGraph:
    """Objects with attributes and relations between them, merged as SPICE merges them."""

    def __init__(self, synsets: SynsetFn, merge_similar: bool = True):
        self._synsets = synsets
        self._merge = merge_similar
        self.nodes: list[_Node] = []
        self.relations: list[_Relation] = []

    def _concept(self, word: str) -> Concept:
        return Concept(word, self._synsets(word))

    def _node(self, word: str) -> _Node:
        new = self._concept(word)
        best, best_sim = None, 0.0
        for node in self.nodes:
            if node.obj.equals(new):
                return node
            sim = new.similarity(node.obj)
            if sim > best_sim:
                best, best_sim = node, sim
        if self._merge and best is not None:
            best.obj.merge(new)
            return best
        node = _Node(new)
        self.nodes.append(node)
        return node

    def add_object(self, obj: str) -> None:
        self._node(obj)

    def add_attribute(self, obj: str, attr: str) -> None:
        node = self._node(obj)
        new = self._concept(attr)
        if any(a.equals(new) for a in node.attrs):
            return
        if self._merge:
            for a in node.attrs:
                if new.similar(a):
                    a.merge(new)
                    return
        node.attrs.append(new)

    def add_relation(self, subj: str, rel: str, obj: str) -> None:
        source, target = self._node(subj), self._node(obj)
        # SPICE stores copular predicates without the copula ("be on" -> "on").
        if rel.startswith("be "):
            rel = rel[3:]
        new = self._concept(rel)
        same_ends = [r for r in self.relations if r.source is source and r.target is target]
        if any(r.rel.equals(new) for r in same_ends):
            return
        if self._merge:
            for r in same_ends:
                if new.similar(r.rel):
                    r.rel.merge(new)
                    return
        self.relations.append(_Relation(source, target, new))

    def add(self, tup: Sequence[str]) -> None:
        if len(tup) == 1:
            self.add_object(tup[0])
        elif len(tup) == 2:
            self.add_attribute(tup[0], tup[1])
        elif len(tup) == 3:
            self.add_relation(tup[0], tup[1], tup[2])
        else:
            raise ValueError(f"a scene-graph tuple has 1-3 elements, got {tup!r}")

    @classmethod
    def from_tuples(cls, tuples: Iterable[Sequence[str]], synsets: SynsetFn,
                    merge_similar: bool = True) -> "SceneGraph":
        g = cls(synsets, merge_similar)
        for t in tuples:
            g.add(t)
        return g

    def tuples(self) -> list[tuple[tuple[frozenset, frozenset], ...]]:
        """Frozen tuples of (words, synsets) concepts: objects, attributes, then relations."""
        out = []
        objs = {}  # one frozen copy per node, shared by its tuples
        for node in self.nodes:
            o = objs[id(node)] = node.obj.snapshot()
            out.append((o,))
            out.extend((o, a.snapshot()) for a in node.attrs)
        for r in self.relations:
            out.append((objs[id(r.source)], r.rel.snapshot(), objs[id(r.target)]))
        return out

    def readable(self) -> list[tuple[str, ...]]:
        """Tuples as '/'-joined words, for inspection and tests."""
        return [tuple("/".join(sorted(c[0])) for c in t) for t in self.tuples()]


FrozenTuple = tuple[tuple[frozenset, frozenset], ...]


def _single(concept: tuple[frozenset, frozenset]) -> str | None:
    words = concept[0]
    return next(iter(words)) if len(words) == 1 else None


def category_of(t: FrozenTuple) -> set[str]:
    """The SPICE subsets a tuple belongs to (beyond "all")."""
    if len(t) == 1:
        return {"object"}
    if len(t) == 3:
        return {"relation"}
    cats = {"attribute"}
    word = _single(t[1])
    if word in SMALL_NUMBERS:
        cats.add("count")
    if word in COMMON_COLORS:
        cats.add("color")
    if word in SIZE_ADJECTIVES:
        cats.add("size")
    return cats


def _similar(a: FrozenTuple, b: FrozenTuple) -> bool:
    if len(a) != len(b):
        return False
    for (wa, sa), (wb, sb) in zip(a, b):
        if sa.isdisjoint(sb) and wa.isdisjoint(wb):
            return False
    return True


def tuple_index(ref: Sequence[FrozenTuple]) -> dict[tuple[int, str], list[FrozenTuple]]:
    """References by length and by each word and synset of their first element."""
    index: dict[tuple[int, str], list[FrozenTuple]] = {}
    for r in ref:
        for key in r[0][0] | r[0][1]:
            index.setdefault((len(r), key), []).append(r)
    return index


def matched(cand: Sequence[FrozenTuple], ref: Sequence[FrozenTuple], synonyms: bool = True,
            index: dict[tuple[int, str], list[FrozenTuple]] | None = None) -> list[bool]:
    """For each candidate tuple: does some reference tuple match it?

    Synonym mode compares every reference of the same length, or, given ``index``
    (:func:`tuple_index` of ``ref``, for references matched against many candidates), only
    those whose first element shares a word or synset with the candidate's: the answer is the
    same, since similar tuples share one.
    """
    if not synonyms:
        exact = set(ref)
        return [c in exact for c in cand]
    if index is None:
        return [any(_similar(c, r) for r in ref) for c in cand]
    flags = []
    for c in cand:
        hit = False
        for key in c[0][0] | c[0][1]:
            for r in index.get((len(c), key), ()):
                if _similar(c, r):
                    hit = True
                    break
            if hit:
                break
        flags.append(hit)
    return flags


@dataclass(frozen=True)
class Counts:
    tp: int
    n_cand: int
    n_ref: int

    def f_score(self, allow_nan: bool) -> tuple[float, float, float]:
        """(f, precision, recall) exactly as SPICE's ``Evaluation.calcFScore``."""
        if allow_nan and self.n_ref == 0:
            return math.nan, math.nan, math.nan
        pr = re = f = 0.0
        if self.n_ref > 0:
            re = self.tp / self.n_ref
            if self.n_cand > 0:
                pr = self.tp / self.n_cand
            if pr > 0 and re > 0:
                f = 2.0 * pr * re / (pr + re)
        return f, pr, re


class TupleSet:
    """A graph's frozen tuples with their categories (computed once, reused per comparison)."""

    def __init__(self, graph: SceneGraph):
        self.tuples = graph.tuples()
        self.cats = [category_of(t) for t in self.tuples]
        # A reference set met by several candidates gets match indexes, built once; its first
        # comparison scans (cheaper than building an index for one use).
        self._indexes: dict[str, dict] = {}
        self._scanned: set[str] = set()

    def select(self, cat: str) -> list[FrozenTuple]:
        return [t for t, c in zip(self.tuples, self.cats) if cat in c]

    def index(self, cat: str = "all") -> dict[tuple[int, str], list[FrozenTuple]] | None:
        """The match index of ``cat``'s tuples, or None on the first request (scan instead)."""
        idx = self._indexes.get(cat)
        if idx is None:
            if cat not in self._scanned:
                self._scanned.add(cat)
                return None
            idx = self._indexes[cat] = tuple_index(self.tuples if cat == "all" else self.select(cat))
        return idx


def evaluate(cand: SceneGraph | TupleSet, ref: SceneGraph | TupleSet,
             synonyms: bool = True) -> dict[str, dict[str, float]]:
    """Per category ("all" + :data:`CATEGORIES`): f, pr, re, tp, n_cand, n_ref.

    Object, attribute and relation tuples can only match tuples of their own length, so their
    counts come from the "all" comparison; color, count and size compare only within the
    category, as SPICE's filtered tuple sets do.
    """
    cs = cand if isinstance(cand, TupleSet) else TupleSet(cand)
    rs = ref if isinstance(ref, TupleSet) else TupleSet(ref)
    flags = matched(cs.tuples, rs.tuples, synonyms, rs.index() if synonyms else None)
    out: dict[str, dict[str, float]] = {}
    for cat in ("all",) + CATEGORIES:
        if cat == "all":
            tp, n_c, n_r = sum(flags), len(cs.tuples), len(rs.tuples)
        elif cat in ("object", "attribute", "relation"):
            sel = [f for f, c in zip(flags, cs.cats) if cat in c]
            tp, n_c = sum(sel), len(sel)
            n_r = sum(1 for c in rs.cats if cat in c)
        else:
            c_sel, r_sel = cs.select(cat), rs.select(cat)
            if c_sel and r_sel:
                tp = sum(matched(c_sel, r_sel, synonyms, rs.index(cat) if synonyms else None))
            else:
                tp = 0
            n_c, n_r = len(c_sel), len(r_sel)
        f, pr, re = Counts(tp, n_c, n_r).f_score(allow_nan=cat != "all")
        out[cat] = {"f": f, "pr": pr, "re": re, "tp": tp, "n_cand": n_c, "n_ref": n_r}
    return out
