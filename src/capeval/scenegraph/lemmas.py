"""Lemma repair for scene-graph matching.

Two repairs, both checked against WordNet so they only fire on real errors.

1. spaCy's (and NLTK's) lemmatizers strip "-ing"/"-ed" without restoring a silent "e" when the
stripped stem is itself a word: "riding" -> "rid", "hoping" -> "hop". Such lemmas break matching
against references that say "ride". English doubles a final consonant after a short vowel
("ridding", "hopping"), so an undoubled consonant-vowel-consonant stem before "-ing"/"-ed" points
to the silent-e verb; it is used when WordNet knows that verb.

2. The opposite slip: "wooded" -> "woode", "outstretched" -> "outstretche". When the lemma is no
   WordNet word but the surface form is one, the surface form is kept (CoreNLP leaves such
   participial adjectives unchanged too).
"""
from __future__ import annotations

from collections.abc import Callable

_VOWELS = set("aeiou")
# Stems that take "-es" in the third person / plural (box-es, buzz-es, pass-es, catch-es).
_SIBILANT_ENDS = set("sxzh")


def _cvc(stem: str) -> bool:
    if len(stem) < 3:
        return False
    a, b, c = stem[-3], stem[-2], stem[-1]
    return a not in _VOWELS and b in _VOWELS and c not in _VOWELS and c not in "wxy"


def repair_verb_lemma(word: str, lemma: str, is_verb: Callable[[str], bool]) -> str:
    """Return the silent-e lemma when ``lemma`` is the bare stem of ``word`` and that is wrong."""
    w = word.lower()
    if w.endswith("ing"):
        stem = w[:-3]
    elif w.endswith("ed"):
        stem = w[:-2]
    elif w.endswith("es"):
        stem = w[:-2]
        if stem[-1:] in _SIBILANT_ENDS:  # "boxes", "buzzes": "-es" is the real suffix
            return lemma
    else:
        return lemma
    if lemma != stem or not _cvc(stem):
        return lemma
    candidate = stem + "e"
    return candidate if is_verb(candidate) else lemma


def wordnet_verb_test(wordnet) -> Callable[[str], bool]:
    """``is_verb(word)``: the word is a verb lemma in WordNet (no morphology applied)."""
    cache: dict[str, bool] = {}

    def is_verb(word: str) -> bool:
        hit = cache.get(word)
        if hit is None:
            # lemmas() keeps only lemma names equal to the query, so inflections do not count
            hit = cache[word] = bool(wordnet.lemmas(word, pos="v"))
        return hit

    return is_verb


def repair_unknown_lemma(word: str, lemma: str, known: Callable[[str], bool]) -> str:
    """Keep the surface form when the lemmatizer produced a non-word and the form is a word."""
    w = word.lower()
    if lemma == w or not w.isalpha() or known(lemma) or not known(w):
        return lemma
    return w


def wordnet_known_test(wordnet) -> Callable[[str], bool]:
    """``known(word)``: WordNet has the word, in any part of speech (its morphology applied)."""
    cache: dict[str, bool] = {}

    def known(word: str) -> bool:
        hit = cache.get(word)
        if hit is None:
            hit = cache[word] = bool(wordnet.synsets(word))
        return hit

    return known
