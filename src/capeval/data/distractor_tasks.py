"""Binary forced-choice distractor tasks, after Hodosh & Hockenmaier (2016): the generator.

Their task files are not available, so the same task families are rebuilt from any captioned
image set. Each item pairs one caption of an image (the *correct* candidate) with a
*distractor* for the same image; the references are the image's other captions, never the
correct candidate itself. A metric passes an item when it scores the correct caption higher
(scoring those items is :mod:`capeval.stats.distractor_accuracy`).

Everything here is pure and deterministic: the dependency parses come from an injected
``parse`` callable (:mod:`capeval.data.distractors` passes spaCy), and every random choice is
drawn from a generator seeded with ``(seed, task, crc32(image id))``, so an item does not
depend on which other images or tasks are generated. The rules are in docs/DISTRACTORS.md;
the constants below are the word lists those rules name.
"""
from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

DEFAULT_SEED = 2016  # the year of Hodosh & Hockenmaier's tasks; any fixed value would do

TASKS = (
    "replace-person",  # the subject person NP swapped for another image's, of another gender/age
    "replace-scene",  # the scene PP swapped for another image's, with another scene noun
    "share-person",  # another image's caption with the same person NP
    "share-scene",  # another image's caption with the same scene PP
    "just-person",  # the person NP alone
    "just-scene",  # the scene PP alone
    "shuffle",  # the caption's words in random order
    "object-list",  # the gaming attack: the references' nouns, listed
)

# Replacement needs two people who cannot both be right, so only these classes are
# swapped, and only across classes. Role nouns (skier, player) and generic ones (person,
# child) fit any class, so they are person nouns but never swapped in or out.
PERSON_CLASSES: dict[str, frozenset[str]] = {
    "male-adult": frozenset("man men guy guys gentleman gentlemen father fathers dad husband boyfriend "
                            "grandfather grandpa businessman businessmen".split()),
    "female-adult": frozenset("woman women lady ladies mother mothers mom wife girlfriend grandmother "
                              "grandma businesswoman businesswomen".split()),
    "male-child": frozenset("boy boys son sons".split()),
    "female-child": frozenset("girl girls daughter daughters".split()),
    "baby": frozenset("baby babies toddler toddlers infant infants".split()),
}
GENERIC_PERSON_NOUNS = frozenset(
    "person people child children kid kids adult adults teenager teenagers teen teens youth youths "
    "player players rider riders biker bikers cyclist cyclists bicyclist skier skiers snowboarder "
    "snowboarders surfer surfers skateboarder skateboarders climber climbers runner runners hiker hikers "
    "swimmer swimmers dancer dancers worker workers officer officers policeman policemen soldier soldiers "
    "athlete athletes musician musicians performer performers tourist tourists spectator spectators "
    "student students couple friends family".split())
PERSON_NOUNS = frozenset().union(GENERIC_PERSON_NOUNS, *PERSON_CLASSES.values())
_PERSON_CLASS = {w: c for c, words in PERSON_CLASSES.items() for w in words}

# Places and surfaces a picture is taken in; the head noun of a scene PP's object.
SCENE_NOUNS = frozenset(
    "park parks beach beaches street streets road roads sidewalk sidewalks field fields grass lawn yard "
    "backyard garden meadow snow water ocean sea lake river stream creek pool pond fountain waves wave "
    "surf shore shoreline mountain mountains hill hills hillside slope cliff rocks rock forest woods "
    "trail path track court stage room kitchen bedroom playground city town desert sand dirt mud "
    "building buildings house store shop restaurant bar market stadium arena rink ice bridge alley lot "
    "subway station airport church office classroom gym area crowd outdoors background parade "
    "countryside village square plaza highway lane driveway porch deck dock pier harbor boat "
    "campsite tent jungle swamp marsh field".split())
SCENE_PREPOSITIONS = frozenset(
    "in on at near by through across along down up over under inside outside beside into onto behind "
    "around past toward towards atop underneath beneath".split())
# "in front of a building": the scene noun is the object of the "of" phrase.
RELATIONAL_NOUNS = frozenset("front middle side top edge bottom back end center centre corner base foot "
                             "part".split())
SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass"})
MIN_SHUFFLE_TOKENS = 3
MIN_OBJECT_NOUNS = 2
MAX_DRAWS = 2000  # rejection-sampling budget for a donor; an item without one is skipped


@dataclass(frozen=True)
class Token:
    """One parsed token: ``idx`` is its character offset in the caption, ``head`` the index
    of its head in the same caption (a root is its own head), ``pos`` the universal tag."""

    text: str
    idx: int
    tag: str
    pos: str
    dep: str
    head: int
    lemma: str = ""


Parse = tuple[Token, ...]


@dataclass(frozen=True)
class Span:
    start: int  # first token
    end: int  # one past the last token
    head: int  # head noun (person) or preposition (scene)
    key: str  # lower-cased surface text: what "share" tasks match on
    noun: str  # lower-cased head noun (person) or scene noun (scene)


@dataclass(frozen=True)
class DistractorItem:
    task: str
    image: str
    correct: str
    distractor: str
    references: tuple[str, ...]
    caption_index: int  # which of the image's captions is the correct candidate
    donor: str = ""  # image whose caption supplied the distractor material, if any


@dataclass
class _Caption:
    image: str
    index: int
    text: str
    parse: Parse
    person: Span | None = None
    scene: Span | None = None


# ---- parse analysis ------------------------------------------------------------------------

def _children(parse: Parse, i: int) -> list[int]:
    return [j for j, t in enumerate(parse) if t.head == i and j != i]


def _subtree(parse: Parse, i: int) -> list[int]:
    out, stack = [], [i]
    while stack:
        k = stack.pop()
        out.append(k)
        stack.extend(_children(parse, k))
    return sorted(out)


def _root(parse: Parse) -> int | None:
    for i, t in enumerate(parse):
        if t.head == i:
            return i
    return None


def _word(t: Token) -> str:
    return t.text.lower()


def _is(t: Token, words: frozenset[str]) -> bool:
    return _word(t) in words or t.lemma.lower() in words


def _text(caption: str, parse: Parse, start: int, end: int) -> str:
    last = parse[end - 1]
    return caption[parse[start].idx: last.idx + len(last.text)]


def person_span(caption: str, parse: Parse) -> Span | None:
    """The person NP: the root's subject (or a verbless caption's root noun) when its head
    noun is a person noun; the span is the noun with its left dependents ("a young man"),
    leaving post-modifiers ("in a red shirt") in the sentence."""
    root = _root(parse)
    if root is None:
        return None
    if parse[root].pos in ("NOUN", "PROPN"):
        head = root
    else:
        subjects = [j for j in _children(parse, root) if parse[j].dep in SUBJECT_DEPS]
        if not subjects:
            return None
        head = subjects[0]
    if parse[head].pos != "NOUN" or not _is(parse[head], PERSON_NOUNS):
        return None
    left = [j for j in _subtree(parse, head) if j <= head]
    start = left[0]
    if left != list(range(start, head + 1)):
        return None  # not contiguous: no clean phrase to cut out
    return Span(start, head + 1, head, _text(caption, parse, start, head + 1).lower(), _word(parse[head]))


def _scene_noun(parse: Parse, prep: int) -> int | None:
    objs = [j for j in _children(parse, prep) if parse[j].dep == "pobj"]
    if not objs:
        return None
    obj = objs[0]
    if _is(parse[obj], RELATIONAL_NOUNS):
        for p in _children(parse, obj):
            if parse[p].dep == "prep" and _word(parse[p]) == "of":
                return _scene_noun(parse, p)
        return None
    return obj if parse[obj].pos == "NOUN" and _is(parse[obj], SCENE_NOUNS) else None


def scene_span(caption: str, parse: Parse, person: Span | None = None) -> Span | None:
    """The scene PP: the last prepositional phrase headed by a location preposition whose
    object (through "front of", "side of", …) is a scene noun, outside the person NP."""
    found = None
    for i, t in enumerate(parse):
        if t.dep != "prep" or _word(t) not in SCENE_PREPOSITIONS:
            continue
        if person is not None and person.start <= i < person.end:
            continue
        noun = _scene_noun(parse, i)
        if noun is None:
            continue
        span = _subtree(parse, i)
        if span != list(range(span[0], span[-1] + 1)) or span[0] != i:
            continue
        found = Span(i, span[-1] + 1, i, _text(caption, parse, i, span[-1] + 1).lower(), _word(parse[noun]))
    return found


def _is_plural(parse: Parse, span: Span) -> bool:
    return parse[span.head].tag in ("NNS", "NNPS")


def _person_class(span: Span) -> str | None:
    return _PERSON_CLASS.get(span.noun)


# ---- generation ----------------------------------------------------------------------------

def _rng(seed: int, task: str, image: str) -> np.random.Generator:
    return np.random.default_rng([seed, TASKS.index(task), zlib.crc32(image.encode("utf-8"))])


def _draw(rng: np.random.Generator, pool: Sequence, ok: Callable[[object], bool]):
    if not pool:
        return None
    for _ in range(MAX_DRAWS):
        cand = pool[int(rng.integers(len(pool)))]
        if ok(cand):
            return cand
    return None


def _splice(cand: _Caption, span: Span, donor: _Caption, donor_span: Span) -> str:
    """``cand``'s text with ``span`` replaced by ``donor_span``'s text, re-cased for its new place."""
    parse = cand.parse
    start = parse[span.start].idx
    last = parse[span.end - 1]
    end = last.idx + len(last.text)
    new = _text(donor.text, donor.parse, donor_span.start, donor_span.end)
    if start == 0:
        new = new[:1].upper() + new[1:]
    elif donor_span.start == 0 and donor.parse[0].pos != "PROPN" and donor.parse[0].text != "I":
        new = new[:1].lower() + new[1:]  # a sentence-initial donor moved mid-sentence
    return " ".join((cand.text[:start] + new + cand.text[end:]).split())


def _loose(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _mentions(captions: Sequence[_Caption], word: str) -> bool:
    return any(_word(t) == word or t.lemma.lower() == word for c in captions for t in c.parse)


def generate(
    images: Mapping[str, Sequence[str]],
    parse: Callable[[Sequence[str]], Sequence[Parse]],
    *,
    tasks: Sequence[str] = TASKS,
    seed: int = DEFAULT_SEED,
) -> list[DistractorItem]:
    """Items for every task, at most one per (task, image), in task then image order.

    ``images`` maps an image id to its captions (at least 2: one candidate, one reference).
    ``parse`` gets every distinct caption once and returns their parses in order. Donors for
    replace/share tasks come from the other images of ``images``.
    """
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise InputError(f"unknown distractor task {unknown[0]!r}; choose from {', '.join(TASKS)}")
    for img, caps in images.items():
        if len(caps) < 2:
            raise InputError(f"image {img!r} has {len(caps)} caption(s); distractor items need at least 2")
    texts = list(dict.fromkeys(c for caps in images.values() for c in caps))
    parsed = list(parse(texts))
    if len(parsed) != len(texts):
        raise InputError(f"parse returned {len(parsed)} parses for {len(texts)} captions")
    by_text = dict(zip(texts, parsed))
    table: dict[str, list[_Caption]] = {}
    for img, caps in images.items():
        rows = []
        for k, text in enumerate(caps):
            c = _Caption(img, k, text, by_text[text])
            c.person = person_span(text, c.parse)
            c.scene = scene_span(text, c.parse, c.person)
            rows.append(c)
        table[img] = rows
    everything = [c for rows in table.values() for c in rows]
    pools = {
        "person": [c for c in everything if c.person is not None],
        "swap-person": [c for c in everything if c.person is not None and _person_class(c.person)],
        "scene": [c for c in everything if c.scene is not None],
    }
    share_index: dict[str, dict[str, list[_Caption]]] = {"person": {}, "scene": {}}
    for c in pools["person"]:
        share_index["person"].setdefault(c.person.key, []).append(c)
    for c in pools["scene"]:
        share_index["scene"].setdefault(c.scene.key, []).append(c)

    items = []
    for task in tasks:
        for img in sorted(table):
            item = _make(task, img, table[img], pools, share_index, _rng(seed, task, img))
            if item is not None:
                items.append(item)
    return items


def _make(task, img, rows: list[_Caption], pools, share_index, rng) -> DistractorItem | None:
    order = [int(k) for k in rng.permutation(len(rows))]
    own = {_loose(c.text) for c in rows}
    for k in order:
        cand = rows[k]
        others = [c for c in rows if c is not cand]
        made = _distractor(task, cand, rows, others, pools, share_index, rng)
        if made is None:
            continue
        text, donor = made
        if _loose(text) in own or not text.strip():
            continue  # a distractor equal to one of the image's captions would be correct
        return DistractorItem(task, img, cand.text, text, tuple(c.text for c in others), cand.index, donor)
    return None


def shuffled(parse: Parse, rng: np.random.Generator) -> str | None:
    """The ``shuffle`` rule: the parse's tokens in a random order that differs from the
    original, trailing punctuation kept last; None under ``MIN_SHUFFLE_TOKENS`` tokens or with
    fewer than two distinct words. Also used for synthetic training negatives
    (:mod:`capeval.learn.builder`)."""
    words = [t.text for t in parse]
    tail = []
    while words and all(not ch.isalnum() for ch in words[-1]):
        tail.insert(0, words.pop())
    if len(words) < MIN_SHUFFLE_TOKENS or len(set(words)) < 2:
        return None
    perm = list(words)
    while perm == words:  # terminates: at least two distinct words
        perm = [words[int(i)] for i in rng.permutation(len(words))]
    return " ".join(perm + tail)


def object_list(reference_parses: Sequence[Parse]) -> str | None:
    """The ``object-list`` rule: the references' nouns (universal POS ``NOUN``, lower-cased,
    first occurrence order) joined by spaces; None under ``MIN_OBJECT_NOUNS`` nouns. Also used
    for synthetic training negatives (:mod:`capeval.learn.builder`)."""
    nouns = list(dict.fromkeys(_word(t) for p in reference_parses for t in p if t.pos == "NOUN"))
    if len(nouns) < MIN_OBJECT_NOUNS:
        return None
    return " ".join(nouns)


def _distractor(task, cand: _Caption, rows, others, pools, share_index, rng) -> tuple[str, str] | None:
    p, s = cand.person, cand.scene
    if task == "replace-person":
        cls = _person_class(p) if p is not None else None
        if cls is None:
            return None
        plural = _is_plural(cand.parse, p)
        donor = _draw(rng, pools["swap-person"], lambda d: (
            d.image != cand.image and _person_class(d.person) not in (None, cls)
            and _is_plural(d.parse, d.person) == plural and not _mentions(rows, d.person.noun)))
        if donor is None:
            return None
        return _splice(cand, p, donor, donor.person), donor.image
    if task == "replace-scene":
        if s is None:
            return None
        donor = _draw(rng, pools["scene"], lambda d: (
            d.image != cand.image and d.scene.noun != s.noun and not _mentions(rows, d.scene.noun)))
        if donor is None:
            return None
        return _splice(cand, s, donor, donor.scene), donor.image
    if task in ("share-person", "share-scene"):
        span = p if task == "share-person" else s
        if span is None:
            return None
        kind = task.split("-")[1]
        same = [d for d in share_index[kind].get(span.key, ()) if d.image != cand.image]
        if not same:
            return None
        donor = same[int(rng.integers(len(same)))]
        return donor.text, donor.image
    if task in ("just-person", "just-scene"):
        span = p if task == "just-person" else s
        if span is None:
            return None
        text = _text(cand.text, cand.parse, span.start, span.end)
        return text[:1].upper() + text[1:], ""
    if task == "shuffle":
        text = shuffled(cand.parse, rng)
        return None if text is None else (text, "")
    if task == "object-list":
        text = object_list([c.parse for c in others])
        return None if text is None else (text, "")
    raise AssertionError(task)  # generate() validated the task names


__all__ = ["TASKS", "DEFAULT_SEED", "Token", "Parse", "Span", "DistractorItem", "person_span", "scene_span",
           "generate", "object_list", "shuffled", "PERSON_CLASSES", "GENERIC_PERSON_NOUNS", "PERSON_NOUNS", "SCENE_NOUNS",
           "SCENE_PREPOSITIONS", "RELATIONAL_NOUNS"]
