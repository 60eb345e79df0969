"""The perturbation rules: pure functions of a caption, its spaCy parse, its references and a
seeded generator (docs/STRESS.md, Rules).

Each rule returns the perturbed caption, or a :class:`Skip` saying why it does not apply to this
caption (no noun to swap, no number word, ...); the harness reports skipped items, it never drops
them. Where a rule chooses (which noun, which co-hyponym), it draws from the generator it is
given, which :func:`rule_rng` derives from the seed, the rule's name and the item, so a rule's
output on an item does not depend on the other items or on the other rules.

Rules that introduce a word (a co-hyponym, a colour, a number, an object) never pick one that
the image's references use: the new caption must be wrong about the image, not merely different.
"""
from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..data.distractor_tasks import Parse, Token
from . import lexicon as lx

Expected = Literal["lower", "same", "not_higher"]


@dataclass(frozen=True)
class Skip:
    """The rule does not apply to this caption, and why."""

    reason: str


@dataclass(frozen=True)
class Context:
    """What a rule may read about one item."""

    key: str  # the item's id (seeds its generator)
    text: str
    parse: Parse
    references: tuple[str, ...] = ()
    image: str | None = None
    #: (image, caption) of every item of the run, for ``random_caption``
    donors: Sequence[tuple[str | None, str]] = ()
    lexicon: lx.WordNetLexicon = field(default_factory=lx.WordNetLexicon)

    def ref_words(self) -> frozenset[str]:
        return _words(" ".join(self.references))

    def own_words(self) -> frozenset[str]:
        return _words(self.text)


Outcome = str | Skip
Rule = Callable[[Context, np.random.Generator], Outcome]

_TOKEN = re.compile(r"[a-z0-9]+")
_FINAL_PUNCT = ".!?"


def _words(text: str) -> frozenset[str]:
    return frozenset(_TOKEN.findall(text.lower()))


def _mentioned(phrase: str, words: frozenset[str]) -> bool:
    """Whether any word of ``phrase``, or its plural, is among ``words``."""
    return any(w in words or lx.plural(w) in words for w in phrase.split())


def rule_rng(seed: int, rule: str, key: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(rule.encode("utf-8")), zlib.crc32(key.encode("utf-8"))])


def _pick(rng: np.random.Generator, options: Sequence):
    return options[int(rng.integers(len(options)))]


# ---- editing helpers -----------------------------------------------------------------------

def _span(parse: Parse, start: int, end: int) -> tuple[int, int]:
    """Character offsets of tokens ``start``..``end - 1``."""
    last = parse[end - 1]
    return parse[start].idx, last.idx + len(last.text)


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    """``text`` with each (start, end, new) character range replaced; ranges do not overlap."""
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return " ".join(text.split())


def _replace_word(ctx: Context, i: int, new: str, fix_article: bool = False) -> str:
    """Token ``i`` replaced by ``new`` (in the token's case); with ``fix_article``, a preceding
    "a"/"an" is made to agree with the new word."""
    parse = ctx.parse
    tok = parse[i]
    edits = [(tok.idx, tok.idx + len(tok.text), lx.same_case(tok.text, new))]
    if fix_article and i > 0 and parse[i - 1].text.lower() in ("a", "an"):
        art = parse[i - 1]
        edits.append((art.idx, art.idx + len(art.text), lx.same_case(art.text, lx.article_for(new))))
    return _apply(ctx.text, edits)


def _split_tail(text: str) -> tuple[list[str], list[str]]:
    """Whitespace words, and the final punctuation tokens ("." "!" "?") kept apart."""
    words = text.split()
    tail: list[str] = []
    while words and all(ch in _FINAL_PUNCT for ch in words[-1]):
        tail.insert(0, words.pop())
    return words, tail


def _children(parse: Parse, i: int) -> list[int]:
    return [j for j, t in enumerate(parse) if t.head == i and j != i]


def _root(parse: Parse) -> int | None:
    return next((i for i, t in enumerate(parse) if t.head == i), None)


# ---- rules ---------------------------------------------------------------------------------

#: Dependency labels of nouns that name an object (not a modifier inside a compound).
HEAD_DEPS = frozenset({"nsubj", "nsubjpass", "dobj", "pobj", "attr", "ROOT", "conj", "appos", "oprd", "npadvmod"})


def _inflected_plural(t: Token) -> bool:
    """A plural noun whose form differs from its lemma ("dogs", not "cattle" or "sheep"): the
    new noun is then made plural too; a word plural without an ending takes the new one as is."""
    return t.tag in ("NNS", "NNPS") and t.text.lower() != (t.lemma or t.text).lower()


def object_swap(ctx: Context, rng: np.random.Generator) -> Outcome:
    """A head noun replaced by a WordNet co-hyponym of its first sense (dog -> cat), in the
    noun's number; a preceding "a"/"an" agrees with the new word."""
    nouns = [i for i, t in enumerate(ctx.parse) if t.pos == "NOUN" and t.dep in HEAD_DEPS and t.text.isalpha()
             and (t.lemma or t.text).lower() not in lx.RELATIONAL_NOUNS]
    if not nouns:
        return Skip("no head noun")
    avoid = ctx.ref_words() | ctx.own_words()
    options = {}
    for i in nouns:
        opts = [w for w in ctx.lexicon.co_hyponyms((ctx.parse[i].lemma or ctx.parse[i].text).lower())
                if not _mentioned(w, avoid)]
        if opts:
            options[i] = opts
    if not options:
        return Skip("no head noun with a WordNet co-hyponym the references do not use")
    i = _pick(rng, sorted(options))
    new = _pick(rng, options[i])
    if _inflected_plural(ctx.parse[i]):
        new = lx.plural(new)
    return _replace_word(ctx, i, new, fix_article=True)


def add_object(ctx: Context, rng: np.random.Generator) -> Outcome:
    """A hallucinated phrase "<relation> a <colour> <object>" appended before the final
    punctuation; the object is one neither the caption nor the references mention."""
    avoid = ctx.ref_words() | ctx.own_words()
    objects = [o for o in lx.ADD_OBJECTS if not _mentioned(o, avoid)]
    if not objects:
        return Skip("every listed object is mentioned")
    obj = _pick(rng, objects)
    colour = _pick(rng, lx.COLOURS)
    rel = _pick(rng, lx.ADD_RELATIONS)
    words, tail = _split_tail(ctx.text)
    if not words:
        return Skip("no words")
    return " ".join([*words, rel, lx.article_for(colour), colour, obj, *tail])


def attribute_swap(ctx: Context, rng: np.random.Generator) -> Outcome:
    """A colour adjective replaced by another colour, or a size adjective by one of the opposite
    size (big -> small); never by one the references use."""
    avoid = ctx.ref_words() | ctx.own_words()
    options: dict[int, list[str]] = {}
    for i, t in enumerate(ctx.parse):
        word = t.text.lower()
        if t.pos != "ADJ" and t.dep not in ("amod", "acomp"):
            continue
        if word in lx.COLOURS:
            pool = [c for c in lx.COLOURS if c not in avoid and {c, word} != {"gray", "grey"}]
        elif word in lx.SIZES_LARGE:
            pool = [s for s in lx.SIZES_SMALL if s not in avoid]
        elif word in lx.SIZES_SMALL:
            pool = [s for s in lx.SIZES_LARGE if s not in avoid]
        else:
            continue
        if pool:
            options[i] = pool
    if not options:
        found = any(t.text.lower() in lx.COLOURS + lx.SIZES_LARGE + lx.SIZES_SMALL for t in ctx.parse)
        return Skip("every replacement occurs in the references" if found else "no colour or size adjective")
    i = _pick(rng, sorted(options))
    word = ctx.parse[i].text.lower()
    new = _pick(rng, options[i])
    return _replace_word(ctx, i, new, fix_article=word[:1] in "aeiou" or new[:1] in "aeiou")


def count_swap(ctx: Context, rng: np.random.Generator) -> Outcome:
    """A number from two to ten (word or digit) replaced by another one that the references do
    not use ("one" and "a" are left alone: changing them would also change the noun's number)."""
    avoid = ctx.ref_words()
    hits = [i for i, t in enumerate(ctx.parse)
            if (t.text.lower() in lx.NUMBER_WORDS or t.text in lx.DIGITS) and (t.pos == "NUM" or t.tag == "CD")]
    if not hits:
        return Skip("no number from two to ten")
    i = _pick(rng, hits)
    text = ctx.parse[i].text
    word = lx.DIGITS.get(text, text.lower())
    digit_of = {w: d for d, w in lx.DIGITS.items()}
    pool = [w for w in lx.NUMBER_WORDS if w != word and w not in avoid and digit_of[w] not in avoid]
    if not pool:
        return Skip("every other number occurs in the references")
    new = _pick(rng, pool)
    return _replace_word(ctx, i, digit_of[new] if text in lx.DIGITS else new)


def _relations(parse: Parse) -> list[tuple[int, int, str]]:
    """(first token, one past the last, key) of each spatial relation, multi-word ones first."""
    out: list[tuple[int, int, str]] = []
    taken: set[int] = set()
    keys = sorted(lx.RELATIONS, key=lambda k: -len(k.split()))
    for key in keys:
        k = len(key.split())
        for i in range(len(parse) - k + 1):
            if any(j in taken for j in range(i, i + k)):
                continue
            if " ".join(t.text.lower() for t in parse[i:i + k]) != key:
                continue
            last = parse[i + k - 1]
            # a preposition (not a particle: "turned on"); multi-word relations end in one
            if last.dep == "prep" or (k == 1 and last.pos == "ADP" and last.dep != "prt"):
                out.append((i, i + k, key))
                taken.update(range(i, i + k))
    return sorted(out)


def relation_swap(ctx: Context, rng: np.random.Generator) -> Outcome:
    """A spatial preposition replaced by its opposite (on -> under, in front of -> behind)."""
    found = _relations(ctx.parse)
    if not found:
        return Skip("no spatial preposition")
    start, end, key = _pick(rng, found)
    a, b = _span(ctx.parse, start, end)
    return _apply(ctx.text, [(a, b, lx.same_case(ctx.parse[start].text, lx.RELATIONS[key]))])


_NP_LEFT = frozenset({"det", "amod", "compound", "nummod", "poss", "nmod", "quantmod", "advmod", "predet"})


def _base_np(parse: Parse, i: int) -> tuple[int, int]:
    """Token range of the noun phrase headed by ``i`` up to the head: its determiners and
    modifiers on the left, not its clauses or prepositional phrases."""
    start = i
    stack = [j for j in _children(parse, i) if j < i and parse[j].dep in _NP_LEFT]
    while stack:
        j = stack.pop()
        start = min(start, j)
        stack.extend(k for k in _children(parse, j) if k < j)
    return start, i + 1


def _nominal(t: Token) -> bool:
    return t.pos in ("NOUN", "PROPN")


#: Relational nouns that count or group ("a bunch of buildings"): the whole phrase is the entity.
#: The other relational nouns name a part or a side ("the top of a hill"): the entity is the "of" object.
_GROUPING = frozenset({"couple", "pair", "group", "bunch", "number", "lot", "piece", "kind", "sort", "type"})


def _entity(parse: Parse, i: int) -> tuple[int, int] | None:
    """Token range of the noun phrase naming the thing at ``i``: its base noun phrase, or for a
    relational noun the object of its "of" ("the top of [a hill]"), with the grouping noun in
    front when it counts or groups ("[a bunch of buildings]"); None when there is none."""
    if not _nominal(parse[i]):
        return None
    lemma = (parse[i].lemma or parse[i].text).lower()
    if lemma not in lx.RELATIONAL_NOUNS:
        return _base_np(parse, i)
    for p in _children(parse, i):
        if parse[p].dep == "prep" and parse[p].text.lower() == "of":
            for c in _children(parse, p):
                if parse[c].dep == "pobj":
                    inner = _entity(parse, c)
                    if inner is None:
                        return None
                    return (_base_np(parse, i)[0], inner[1]) if lemma in _GROUPING else inner
    return None


def _entities(parse: Parse, heads: list[int]) -> list[tuple[int, int]]:
    return [e for e in (_entity(parse, k) for k in heads) if e is not None]


def role_swap(ctx: Context, rng: np.random.Generator) -> Outcome:
    """The agent and the object of a verb exchanged ("a dog chasing a cat" -> "a cat chasing a
    dog"): the verb's subject (or, in a caption without a finite verb, the noun the verb
    modifies) and its direct object, else the object of its first preposition."""
    parse = ctx.parse
    Span = tuple[int, int]
    direct: list[tuple[Span, Span]] = []
    oblique: list[tuple[Span, Span]] = []
    for v, t in enumerate(parse):
        if t.pos not in ("VERB", "AUX"):
            continue
        kids = _children(parse, v)
        agents = [c for c in kids if parse[c].dep in ("nsubj",)]
        if t.dep in ("acl", "relcl") and t.head != v:
            agents.append(t.head)
        objs = [c for c in kids if parse[c].dep == "dobj"]
        preps = [c for c in kids if parse[c].dep == "prep"]
        pobjs = [c for p in preps[:1] for c in _children(parse, p) if parse[c].dep == "pobj"]
        for a in _entities(parse, agents):
            direct.extend((a, o) for o in _entities(parse, objs))
            oblique.extend((a, o) for o in _entities(parse, pobjs))
    pairs = []
    for sa, so in direct or oblique:
        if sa[1] <= so[0] or so[1] <= sa[0]:
            pairs.append((sa, so))
    if not pairs:
        return Skip("no verb with both an agent and an object")
    (sa, so) = _pick(rng, pairs)
    ta, tb = (ctx.text[slice(*_span(parse, *sa))], ctx.text[slice(*_span(parse, *so))])
    if _words(ta) == _words(tb):
        return Skip("agent and object read the same")

    def placed(phrase: str, first_tok: int, at_start: bool) -> str:
        if at_start:
            return phrase[:1].upper() + phrase[1:]
        if parse[first_tok].pos != "PROPN" and parse[first_tok].text != "I":
            return phrase[:1].lower() + phrase[1:]
        return phrase

    a0, a1 = _span(parse, *sa)
    b0, b1 = _span(parse, *so)
    return _apply(ctx.text, [(a0, a1, placed(tb, so[0], a0 == 0)), (b0, b1, placed(ta, sa[0], b0 == 0))])


_DO = {"VBZ": "does", "VBP": "do", "VBD": "did"}


def _negate_verb(ctx: Context, v: int) -> str | None:
    parse = ctx.parse
    t = parse[v]
    auxes = [c for c in _children(parse, v) if parse[c].dep in ("aux", "auxpass") and c < v]
    if auxes:  # "is riding" -> "is not riding"
        a = parse[auxes[0]]
        end = a.idx + len(a.text)
        return _apply(ctx.text, [(end, end, " not")])
    if t.pos == "AUX" or t.lemma == "be":  # copula: "is brown" -> "is not brown"
        end = t.idx + len(t.text)
        return _apply(ctx.text, [(end, end, " not")])
    if t.tag in _DO and any(parse[c].dep in ("nsubj", "expl") for c in _children(parse, v)):
        # "rides" -> "does not ride"; only with a subject: a noun mistagged as a verb ("2 cats
        # one on a chair") has none
        new = f"{lx.same_case(t.text, _DO[t.tag])} not {(t.lemma or t.text).lower()}"
        return _apply(ctx.text, [(t.idx, t.idx + len(t.text), new)])
    if t.tag in ("VBG", "VBN", "VB"):  # "a man riding" -> "a man not riding"
        new = f"Not {t.text[:1].lower()}{t.text[1:]}" if t.idx == 0 else f"not {t.text}"
        return _apply(ctx.text, [(t.idx, t.idx + len(t.text), new)])
    return None


def negation(ctx: Context, rng: np.random.Generator) -> Outcome:
    """The main verb negated: "not" after its auxiliary or copula, do-support for a finite verb
    ("rides" -> "does not ride"), or "not" before the participle of a caption without a finite
    verb ("a man riding a horse" -> "a man not riding a horse")."""
    parse = ctx.parse
    if any(t.dep == "neg" or t.text.lower() in lx.NEGATION_WORDS for t in parse):
        return Skip("already negated")
    root = _root(parse)
    if root is None:
        return Skip("no parse root")
    verbs = []
    if parse[root].pos in ("VERB", "AUX"):
        verbs.append(root)
    else:  # a noun phrase caption: its first verb modifying the root noun
        verbs.extend(c for c in _children(parse, root) if parse[c].dep in ("acl", "relcl") and parse[c].pos == "VERB")
    for v in verbs:
        out = _negate_verb(ctx, v)
        if out is not None:
            return out
    return Skip("no verb to negate")


def random_caption(ctx: Context, rng: np.random.Generator) -> Outcome:
    """The candidate of another item, of another image (when items name their images)."""
    pool = ctx.donors
    own = _words(ctx.text)
    for _ in range(200):  # rejection sampling; an item where every draw fails is skipped
        if not pool:
            break
        image, text = _pick(rng, pool)
        if (ctx.image is None or image != ctx.image) and _words(text) != own:
            return text
    return Skip("no caption of another image")


def drop_half(ctx: Context, rng: np.random.Generator) -> Outcome:
    """The second half of the words removed (n // 2 of n words; final punctuation kept)."""
    words, tail = _split_tail(ctx.text)
    if len(words) < 2:
        return Skip("fewer than two words")
    return " ".join([*words[: len(words) - len(words) // 2], *tail])


_CONTENT = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "NUM"})


def repeat(ctx: Context, rng: np.random.Generator) -> Outcome:
    """The caption's content words (nouns, verbs, adjectives, numbers) repeated once after it,
    before the final punctuation."""
    content = [t.text for t in ctx.parse if t.pos in _CONTENT and any(ch.isalnum() for ch in t.text)]
    if not content:
        return Skip("no content word")
    words, tail = _split_tail(ctx.text)
    return " ".join([*words, *content, *tail])


def shuffle(ctx: Context, rng: np.random.Generator) -> Outcome:
    """The words in a random order (whitespace words; final punctuation stays last), never the
    original order."""
    words, tail = _split_tail(ctx.text)
    if len(set(words)) < 2:
        return Skip("fewer than two different words")
    for _ in range(100):
        order = rng.permutation(len(words))
        new = [words[k] for k in order]
        if new != words:
            return " ".join([*new, *tail])
    return Skip("no different order drawn")  # pragma: no cover - 100 failed draws of >= 2 words


def synonym(ctx: Context, rng: np.random.Generator) -> Outcome:
    """A noun or adjective replaced by another lemma of its first WordNet synset (man -> adult
    male, bike -> motorcycle), in the noun's number."""
    options: dict[int, tuple[str, ...]] = {}
    for i, t in enumerate(ctx.parse):
        if not t.text.isalpha():
            continue
        if t.pos == "NOUN" and t.tag in ("NN", "NNS"):
            opts = ctx.lexicon.synonyms((t.lemma or t.text).lower(), "n")
        elif t.pos == "ADJ" and t.tag == "JJ":
            opts = ctx.lexicon.synonyms(t.text.lower(), "a")
        else:
            continue
        if opts:
            options[i] = opts
    if not options:
        return Skip("no noun or adjective with a WordNet synonym")
    i = _pick(rng, sorted(options))
    new = _pick(rng, options[i])
    if _inflected_plural(ctx.parse[i]):
        new = lx.plural(new)
    return _replace_word(ctx, i, new, fix_article=True)


def case_punct(ctx: Context, rng: np.random.Generator) -> Outcome:
    """The first letter's case flipped and the final punctuation toggled (removed when present,
    a full stop added when absent)."""
    text = ctx.text.strip()
    k = next((j for j, ch in enumerate(text) if ch.isalpha()), None)
    if k is None:
        return Skip("no letter")
    ch = text[k]
    text = text[:k] + (ch.lower() if ch.isupper() else ch.upper()) + text[k + 1:]
    words, tail = _split_tail(text)
    if tail:
        return " ".join(words)
    if text[-1] in _FINAL_PUNCT:
        return text[:-1]
    return text + "."


def article(ctx: Context, rng: np.random.Generator) -> Outcome:
    """One article exchanged: "a"/"an" -> "the", "the" -> "a"/"an" (agreeing with the next word)."""
    hits = [i for i, t in enumerate(ctx.parse) if t.text.lower() in lx.ARTICLES and t.pos == "DET"]
    if not hits:
        return Skip("no article")
    i = _pick(rng, hits)
    tok = ctx.parse[i]
    if tok.text.lower() == "the":
        nxt = ctx.parse[i + 1].text if i + 1 < len(ctx.parse) else ""
        new = lx.article_for(nxt)
    else:
        new = "the"
    return _apply(ctx.text, [(tok.idx, tok.idx + len(tok.text), lx.same_case(tok.text, new))])


@dataclass(frozen=True)
class Perturbation:
    name: str
    expected: Expected
    change: str
    rule: Rule


PERTURBATIONS: tuple[Perturbation, ...] = (
    Perturbation("object_swap", "lower", "a head noun replaced by a WordNet co-hyponym (dog -> cat)", object_swap),
    Perturbation("add_object", "lower", 'a hallucinated phrase appended ("... next to a red car")', add_object),
    Perturbation("attribute_swap", "lower", "a colour or size adjective replaced by another", attribute_swap),
    Perturbation("count_swap", "lower", "a number word changed (two -> three)", count_swap),
    Perturbation("relation_swap", "lower", "a spatial preposition replaced (on -> under)", relation_swap),
    Perturbation("role_swap", "lower", "subject and object exchanged", role_swap),
    Perturbation("negation", "lower", "the main verb negated", negation),
    Perturbation("random_caption", "lower", "a caption of another image", random_caption),
    Perturbation("drop_half", "lower", "the second half of the words removed", drop_half),
    Perturbation("repeat", "not_higher", "the caption's content words repeated", repeat),
    Perturbation("shuffle", "lower", "the words in random order", shuffle),
    Perturbation("synonym", "same", "a word replaced by a WordNet synonym of its sense", synonym),
    Perturbation("case_punct", "same", "case and final punctuation changed", case_punct),
    Perturbation("article", "same", "a <-> the", article),
)
BY_NAME = {p.name: p for p in PERTURBATIONS}


def apply(name: str, ctx: Context, seed: int) -> Outcome:
    """Perturbation ``name`` of one item: the same text for the same seed, item and caption."""
    return BY_NAME[name].rule(ctx, rule_rng(seed, name, ctx.key))
