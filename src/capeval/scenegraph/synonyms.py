"""Word -> WordNet synset ids, the synonym test of SPICE's matching.

SPICE looks a concept up in METEOR's WordNet 3.0 synonym table, as the word and as its stem, over
every part of speech; two concepts are synonyms when they share a synset. Here the same WordNet
3.0 is read through NLTK: ``wn.synsets(word)`` covers every part of speech and applies WordNet's
own morphology (morphy), which plays the part of METEOR's stem lookup. Multi-word predicates
("sit on") are looked up with underscores, as WordNet spells collocations.
"""
from __future__ import annotations

from collections.abc import Callable


class WordNetSynsets:
    """Callable ``word -> frozenset of synset names``, memoised (captions reuse few words)."""

    def __init__(self, wordnet=None, path=None):
        if wordnet is None:
            from ..resources.wordnet import load_wordnet

            wordnet = load_wordnet(path)
        self._wn = wordnet
        self._cache: dict[str, frozenset] = {}

    def __call__(self, word: str) -> frozenset:
        hit = self._cache.get(word)
        if hit is None:
            key = word.strip().lower().replace(" ", "_")
            hit = frozenset(s.name() for s in self._wn.synsets(key)) if key else frozenset()
            self._cache[word] = hit
        return hit


def no_synsets(word: str) -> frozenset:
    """Exact-match mode (SPICE's ``-noSynsets``): no word has synonyms."""
    return frozenset()


def table_synsets(table: dict[str, set]) -> Callable[[str], frozenset]:
    """A synonym function from an explicit table (tests, or a user-supplied lexicon)."""
    frozen = {k: frozenset(v) for k, v in table.items()}
    return lambda w: frozen.get(w, frozenset())
