"""A spaCy (ClearNLP-label) parse turned into the collapsed, CC-processed Universal Dependencies
graph the SPICE rules are written for (CoreNLP's ``CollapsedCCProcessedDependencies``).

What the conversion does, in order:

1. Prepositions collapse into the relation: ``prep(run, through) + pobj(through, field)`` becomes
   ``nmod:through(run, field)``; fixed multi-word prepositions ("next to", "out of", "in front of",
   "on top of") become one relation; ``agent`` becomes ``nmod:agent``.
2. Copulas: a non-auxiliary "be" with a predicate nominal or adjective (``attr``/``acomp``) makes
   that word the predicate (``nsubj`` + ``cop``), as UD does; "there is a dog" takes the noun
   as subject.
3. Relative pronouns are replaced by the noun the clause modifies ("a man who rides" ->
   ``nsubj(rides, man)``).
4. Conjuncts share their first conjunct's governor relation ("a dog and a cat play" -> two
   subjects; "black and white dog" -> two ``amod``), and a conjoined verb without its own subject
   shares the first verb's subject.
5. Quantity phrases ("a couple of dogs", "lots of people") hand their role to the quantified noun,
   which keeps the quantity word as ``det:qmod`` (SceneGraphParser's ``processQuantificationModifiers``).
6. Pronouns are resolved to the first noun found breadth-first from the root, if it precedes the
   pronoun (SceneGraphParser's ``SimplePronounResolution``): "his hat" -> ``nmod:poss(hat, man)``.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Word:
    i: int
    text: str
    lemma: str
    tag: str

    @property
    def is_noun(self) -> bool:
        return self.tag in ("NN", "NNS", "NNP", "NNPS")

    @property
    def is_plural(self) -> bool:
        return self.tag in ("NNS", "NNPS")


# Fixed multi-word prepositions (CoreNLP's UD multi-word-expression list, the ones captions use).
MWE2 = frozenset({
    "next to", "out of", "close to", "ahead of", "away from", "because of", "inside of",
    "outside of", "instead of", "along with", "together with", "according to", "due to",
    "apart from", "aside from", "far from", "near to", "prior to", "such as", "off of",
    "across from", "up to", "as for",
})
MWE3 = frozenset({
    "in front of", "on top of", "in addition to", "in place of", "on behalf of", "by means of",
    "in spite of", "in case of", "as well as", "on account of", "in lieu of",
})
# Words heading "a <word> of X" quantity phrases, and bare plurals heading "<word> of X".
QUANT_NOUNS = frozenset(
    "lot assortment number couple bunch handful litany sheaf slew dozen series variety multitude "
    "wad clutch wave mountain array spate string ton range plethora heap sort form kind type "
    "version bit pair triple total".split()
)
QUANT_PLURALS = frozenset(
    "lots many several plenty tons dozens multitudes mountains loads pairs tens hundreds "
    "thousands millions billions trillions".split()
)
SINGULAR_PRONOUNS = frozenset(
    "i me myself mine my yourself he him himself his she her herself hers it itself its one "
    "oneself one's".split()
)
RELATIVE_TAGS = ("WDT", "WP")

Edge = tuple[int, str, int]  # (governor, relation, dependent)


class DepGraph:
    """Words plus labelled edges; relations are UD names (``nsubj``, ``nmod:on``, ``amod``...)."""

    def __init__(self, words: Sequence[Word], edges: Iterable[Edge], roots: Iterable[int],
                 mwe_inner: Iterable[int] = ()):
        self.words = list(words)
        self.roots = list(roots)
        # Words inside a multi-word preposition ("front" of "in front of"): not objects.
        self.mwe_inner = set(mwe_inner)
        self._edges: list[Edge] = []
        self._seen: set[Edge] = set()
        for e in edges:
            self.add(*e)

    @property
    def edges(self) -> list[Edge]:
        return list(self._edges)

    def add(self, gov: int, rel: str, dep: int) -> None:
        e = (gov, rel, dep)
        if e not in self._seen and gov != dep:
            self._seen.add(e)
            self._edges.append(e)

    def remove(self, e: Edge) -> None:
        if e in self._seen:
            self._seen.discard(e)
            self._edges.remove(e)

    def out(self, i: int, rel: str | Callable[[str], bool] | None = None) -> list[Edge]:
        """Outgoing edges of ``i`` sorted by dependent, optionally filtered by relation."""
        test = (lambda r: True) if rel is None else rel if callable(rel) else (lambda r: r == rel)
        return sorted((e for e in self._edges if e[0] == i and test(e[1])), key=lambda e: e[2])

    def into(self, i: int) -> list[Edge]:
        return [e for e in self._edges if e[2] == i]

    def children(self, i: int, rel: str | Callable[[str], bool] | None = None) -> list[int]:
        return [e[2] for e in self.out(i, rel)]

    def has(self, i: int, rel: str) -> bool:
        return any(e[0] == i and e[1] == rel for e in self._edges)


def is_nmod(rel: str) -> bool:
    return rel.startswith("nmod:")


# spaCy (ClearNLP) labels kept under their UD names; prep/pobj/agent are rebuilt as nmod:*.
_RENAME = {
    "nsubj": "nsubj", "nsubjpass": "nsubjpass", "dobj": "dobj", "dative": "iobj",
    "amod": "amod", "nummod": "nummod", "compound": "compound", "prt": "compound:prt",
    "poss": "nmod:poss", "acl": "acl", "relcl": "acl:relcl", "conj": "conj", "cc": "cc",
    "det": "det", "case": "case", "attr": "attr", "acomp": "acomp", "expl": "expl",
    "aux": "aux", "auxpass": "auxpass", "advmod": "advmod", "xcomp": "xcomp",
    "ccomp": "ccomp", "advcl": "advcl", "neg": "neg", "appos": "appos", "npadvmod": "npadvmod",
}


def build(words: Sequence[Word], heads: Sequence[int], deps: Sequence[str]) -> DepGraph:
    """Convert one parse (``heads[i] == i`` marks a root) into the SPICE-style graph."""
    n = len(words)
    kids: list[list[int]] = [[] for _ in range(n)]
    roots = []
    for i, h in enumerate(heads):
        if h == i:
            roots.append(i)
        else:
            kids[h].append(i)
    low = [w.text.lower() for w in words]

    edges: list[Edge] = []
    mwe_inner: set[int] = set()  # tokens swallowed by a multi-word preposition

    def pobjs(p: int) -> list[int]:
        return [k for k in kids[p] if deps[k] == "pobj"]

    def add_nmod(gov: int, prep_words: list[str], p: int, objs: list[int], agent: bool = False) -> None:
        rel = "nmod:agent" if agent else "nmod:" + "_".join(prep_words)
        for o in objs:
            edges.append((gov, rel, o))
            edges.append((o, "case", p))

    for i in range(n):
        d = deps[i]
        if i in roots or i in mwe_inner:
            continue
        h = heads[i]
        if d in ("prep", "agent", "dative") and pobjs(i):
            objs = pobjs(i)
            # "in front of X": prep(in) -> pobj(front) -> prep(of) -> pobj(X)
            if len(objs) == 1:
                inner = objs[0]
                nxt = [k for k in kids[inner] if deps[k] == "prep" and pobjs(k)]
                if nxt and f"{low[i]} {low[inner]} {low[nxt[0]]}" in MWE3:
                    mwe_inner.update((inner, nxt[0]))
                    add_nmod(h, [low[i], low[inner], low[nxt[0]]], i, pobjs(nxt[0]))
                    continue
            # "next to X" / "out of X": the first word governs a prep with the object
            if deps[h] in ("advmod", "prep", "amod") and f"{low[h]} {low[i]}" in MWE2 and not pobjs(h):
                continue  # attached below from the head word
            add_nmod(h, [low[i]], i, objs, agent=(d == "agent"))
        elif d in ("advmod", "prep", "amod"):
            nxt = [k for k in kids[i] if deps[k] == "prep" and pobjs(k) and f"{low[i]} {low[k]}" in MWE2]
            if nxt and not pobjs(i):
                mwe_inner.add(i)
                add_nmod(h, [low[i], low[nxt[0]]], nxt[0], pobjs(nxt[0]))
            elif d in _RENAME:
                edges.append((h, _RENAME[d], i))
        elif d in _RENAME:
            edges.append((h, _RENAME[d], i))

    g = DepGraph(words, edges, roots, mwe_inner)
    _copulas(g)
    _relative_pronouns(g)
    _conjuncts(g)
    _quantities(g, low)
    _pronouns(g)
    return g


def _copulas(g: DepGraph) -> None:
    for w in g.words:
        if w.lemma != "be" or g.into(w.i) and g.into(w.i)[0][1] in ("aux", "auxpass"):
            continue
        subjects = g.children(w.i, "nsubj")
        preds = g.children(w.i, lambda r: r in ("attr", "acomp"))
        if not subjects and g.children(w.i, "expl"):
            # "there is a dog on the grass": the noun is the subject of "be"
            for p in preds:
                if g.words[p].is_noun:
                    g.add(w.i, "nsubj", p)
            continue
        for p in preds:
            for s in subjects:
                g.add(p, "nsubj", s)
            g.add(p, "cop", w.i)


def _relative_pronouns(g: DepGraph) -> None:
    for gov, rel, clause in g.edges:
        if rel != "acl:relcl":
            continue
        for e in g.out(clause, lambda r: r in ("nsubj", "nsubjpass", "dobj")):
            if g.words[e[2]].tag in RELATIVE_TAGS:
                g.remove(e)
                g.add(clause, e[1], gov)


def _conjuncts(g: DepGraph) -> None:
    for first, rel, second in g.edges:
        if rel != "conj":
            continue
        for gov, r, _ in g.into(first):
            if r not in ("conj", "cc", "case", "cop"):
                g.add(gov, r, second)
        subj = g.children(first, "nsubj")
        if subj and not g.children(second, lambda r: r in ("nsubj", "nsubjpass")) \
                and g.words[second].tag.startswith("V"):
            for s in subj:
                g.add(second, "nsubj", s)


def _quantities(g: DepGraph, low: list[str]) -> None:
    qmods: dict[int, int] = {}
    for w in g.words:
        word = low[w.i]
        if word in QUANT_NOUNS:
            det_ok = any(low[d] in ("a", "an") for d in g.children(w.i, "det"))
        elif word in QUANT_PLURALS or (word[:-1].isdigit() and word.endswith("s")):
            det_ok = True
        else:
            continue
        if not det_ok or w.i + 1 >= len(low) or low[w.i + 1] != "of":
            continue
        targets = [o for o in g.children(w.i, "nmod:of") if g.words[o].is_noun or g.words[o].tag.startswith("PRP")]
        if not targets:
            continue
        gov = targets[0]
        for p, r, _ in g.into(w.i):
            g.remove((p, r, w.i))
            g.add(p, r, gov)
        g.remove((w.i, "nmod:of", gov))
        if w.i in g.roots:
            g.roots[g.roots.index(w.i)] = gov
        # The phrase's first word carries the quantity (its leading article, for "a couple of").
        left = [d for d in g.children(w.i) if d < w.i]
        qmods[gov] = min([w.i] + left)
    for gov, q in qmods.items():
        g.add(gov, "det:qmod", q)


def _bfs_noun(g: DepGraph, start: int, singular: bool) -> int | None:
    seen = set()
    node: int | None = start
    while node is not None:
        queue = deque([node])
        while queue:
            cur = queue.popleft()
            if cur in seen:
                continue
            seen.add(cur)
            tag = g.words[cur].tag
            if tag in ("NN", "NNP") or (not singular and tag in ("NNS", "NNPS")):
                return cur
            queue.extend(g.children(cur))
        parents = g.into(node)
        node = parents[0][0] if parents else None
        if node in seen:
            return None
    return None


def _pronouns(g: DepGraph) -> None:
    if not g.roots:
        return
    for w in g.words:
        if w.i == 0 or not w.tag.startswith("PRP") or not g.into(w.i):
            continue
        ante = _bfs_noun(g, g.roots[0], w.text.lower() in SINGULAR_PRONOUNS)
        if ante is None or ante >= w.i:
            continue
        for gov, r, _ in g.into(w.i):
            g.remove((gov, r, w.i))
            g.add(gov, r, ante)
        for _, r, dep in g.out(w.i):
            g.remove((w.i, r, dep))
            g.add(ante, r, dep)


def from_rows(rows: Sequence[tuple[str, str, str, int, str]]) -> DepGraph:
    """Build from ``(text, tag, dep, head, lemma)`` rows (tests; parses from other parsers)."""
    words = [Word(i, r[0], r[4], r[1]) for i, r in enumerate(rows)]
    return build(words, [r[3] for r in rows], [r[2] for r in rows])
