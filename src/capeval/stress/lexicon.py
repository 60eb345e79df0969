"""Word lists and WordNet look-ups the perturbation rules draw from (docs/STRESS.md, Rules).

The closed-class lists (colours, sizes, number words, spatial prepositions, articles) are fixed
here, so a rule's output depends only on the caption, its parse, the seed and WordNet 3.0.
Part of the suite's rule digest: editing a list changes the signature of every number.
"""
from __future__ import annotations

import re
from functools import cache

COLOURS = ("black", "white", "red", "blue", "green", "yellow", "brown", "orange", "pink", "purple", "gray", "grey")
#: Size adjectives in two opposite groups: a size word is replaced by one of the other group, so
#: the new caption says the opposite (a near-synonym such as big -> large would not be wrong).
SIZES_LARGE = ("big", "large", "huge", "giant", "tall", "long")
SIZES_SMALL = ("small", "little", "tiny", "short")
NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
DIGITS = {str(i): w for i, w in enumerate(NUMBER_WORDS, 2)}

#: Spatial relations and the relation each becomes: an opposite or a clearly different place.
#: Multi-word keys are matched before single words.
RELATIONS = {
    "in front of": "behind",
    "on top of": "underneath",
    "next to": "far from",
    "on": "under",
    "under": "on",
    "underneath": "on top of",
    "beneath": "above",
    "above": "below",
    "below": "above",
    "over": "under",
    "inside": "outside",
    "outside": "inside",
    "behind": "in front of",
    "near": "far from",
    "beside": "behind",
    "atop": "beneath",
}

#: Phrases ``add_object`` appends: "<relation> a <colour> <object>". Objects are common COCO
#: categories that are easy to picture and easy to check against the references.
ADD_RELATIONS = ("next to", "near", "behind", "in front of")
ADD_OBJECTS = ("car", "umbrella", "bicycle", "dog", "chair", "horse", "suitcase", "kite", "truck", "bench",
               "clock", "bottle", "vase", "boat", "backpack", "cat", "giraffe", "laptop", "pizza", "toilet")

#: Nouns that head a relation rather than name an object ("the side of", "the top of") and
#: nouns too generic to swap meaningfully: never object-swapped.
RELATIONAL_NOUNS = frozenset(
    ["front", "middle", "side", "top", "edge", "bottom", "back", "end", "center", "centre", "corner", "base", "foot", "lot", "couple", "pair", "group", "bunch", "number", "piece", "view", "picture", "image", "photo", "photograph", "kind", "sort", "type", "way", "thing", "something", "area", "background", "foreground", "part", "other", "one"]
)
#: People: WordNet's co-hyponyms of "man" or "girl" are near-synonyms ("chap") or slurs, so a
#: person noun (by lemma) is swapped from this table instead.
PERSON_SWAPS = {
    "man": ("woman", "girl"), "woman": ("man", "boy"), "boy": ("girl", "woman"), "girl": ("boy", "man"),
    "guy": ("woman", "girl"), "lady": ("man", "boy"), "child": ("man", "woman"), "kid": ("man", "woman"),
    "gentleman": ("woman", "girl"), "player": ("dog", "robot"), "person": ("dog", "robot"),
}
#: Never introduced by a rule: informal near-synonyms and offensive words WordNet lists.
BLOCKED = frozenset(["bloke", "chap", "fella", "fellow", "lad", "gent", "guy", "dude", "prostitute", "whore", "mantrap", "coquette", "bitch"])
#: WordNet lexicographer files of things one can see: ``object_swap`` swaps a noun only when its
#: first sense is in one of them ("day", "table" as a tabular array are not swapped), and only for a
#: co-hyponym from the same file.
PHYSICAL = frozenset({"noun.artifact", "noun.animal", "noun.person", "noun.food", "noun.plant", "noun.object",
                      "noun.body", "noun.location"})
ARTICLES = ("a", "an", "the")
NEGATION_WORDS = frozenset({"not", "n't", "no", "never", "nobody", "nothing"})

_WORD = re.compile(r"^[a-z]+(?: [a-z]+)?$")


def plural(noun: str) -> str:
    """A regular English plural (the rules swap common nouns; irregular plurals are listed)."""
    irregular = {"man": "men", "woman": "women", "child": "children", "person": "people", "foot": "feet",
                 "tooth": "teeth", "mouse": "mice", "goose": "geese", "sheep": "sheep", "fish": "fish",
                 "deer": "deer", "ox": "oxen", "knife": "knives", "wife": "wives", "leaf": "leaves",
                 "shelf": "shelves", "calf": "calves", "wolf": "wolves", "loaf": "loaves"}
    head, sep, last = noun.rpartition(" ")
    if last in irregular:
        out = irregular[last]
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        out = last + "es"
    elif len(last) > 1 and last.endswith("y") and last[-2] not in "aeiou":
        out = last[:-1] + "ies"
    else:
        out = last + "s"
    return head + sep + out


def article_for(word: str) -> str:
    """"an" before a vowel letter, else "a" (spelling, not sound: "an umbrella", "a unicorn"
    would read "an unicorn"; the swapped words are common nouns where the two rarely differ)."""
    return "an" if word[:1].lower() in "aeiou" else "a"


def same_case(template: str, word: str) -> str:
    """``word`` with ``template``'s capitalisation (all caps, initial capital or as it is)."""
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _clean(name: str) -> str | None:
    """A WordNet lemma name as caption text, or None when it is a proper name, holds digits or
    punctuation, or has more than two words."""
    text = name.replace("_", " ")
    return text if _WORD.match(text) else None


class WordNetLexicon:
    """Co-hyponyms and synonyms from WordNet 3.0 (capeval's copy, :mod:`capeval.resources.wordnet`),
    always through a word's most frequent sense (its first synset), as a caption writer most
    often means it. Memoised per word."""

    def __init__(self, reader=None):
        self._reader = reader

    @property
    def wn(self):
        if self._reader is None:
            from ..resources.wordnet import load_wordnet

            self._reader = load_wordnet()
        return self._reader

    @cache  # noqa: B019 - one lexicon per run; the cache is its purpose
    def co_hyponyms(self, lemma: str) -> tuple[str, ...]:
        """For a noun whose first sense names a visible thing (:data:`PHYSICAL`): other hyponyms of
        that sense's hypernyms, from the same lexicographer file, that people use
        (SemCor count >= 1) and whose own first sense is that sibling (so a reader takes the new
        word in that sense: not "head" for a head of cattle), single or two words, and neither
        the word, one of its synonyms, nor a kind of it or something it is a kind of (not
        "bloke" for "man"); sorted."""
        if lemma in PERSON_SWAPS:
            return PERSON_SWAPS[lemma]
        synsets = self.wn.synsets(lemma, "n")
        if not synsets or synsets[0].lexname() not in PHYSICAL:
            return ()
        sense = synsets[0]
        near = {sense, *sense.hypernyms(), *sense.hyponyms()}
        own = {lemma.lower()} | {n.lower() for s in synsets for n in s.lemma_names()}
        out = set()
        for hyper in sense.hypernyms():
            for sib in hyper.hyponyms():
                if sib in near:
                    continue
                for lem in sib.lemmas():
                    text = _clean(lem.name())
                    if text is None or text in own or text in BLOCKED or lem.count() < 1:
                        continue
                    first = self.wn.synsets(lem.name(), "n")[0]
                    if first != sib or first.lexname() != sense.lexname():
                        continue
                    if sense in first.closure(lambda s: s.hypernyms()):
                        continue
                    if first in sense.closure(lambda s: s.hypernyms()):
                        continue
                    out.add(text)
        return tuple(sorted(out))

    @cache  # noqa: B019
    def synonyms(self, lemma: str, pos: str) -> tuple[str, ...]:
        """Other lemma names of ``lemma``'s first synset of part of speech ``pos`` ("n" or "a")
        that people use in that sense (SemCor count >= 1: car -> automobile, not -> motorcar),
        single or two words; sorted."""
        synsets = self.wn.synsets(lemma, pos)
        if not synsets:
            return ()
        out = set()
        for lem in synsets[0].lemmas():
            text = _clean(lem.name())
            if text is not None and text != lemma.lower() and text not in BLOCKED and lem.count() >= 1:
                out.add(text)
        return tuple(sorted(out))
