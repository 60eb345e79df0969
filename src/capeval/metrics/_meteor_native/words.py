"""Per-word facts METEOR's matchers use, computed once per distinct word.

* ``key``: the jar identifies words by ``String.hashCode()`` (exact matches, and the
  "different words" test of the stem and synonym matchers), so two words with the same hash
  match exactly there too; so they do here.
* ``stem_key``: hash of the Snowball stem.
* ``synsets``: WordNet synsets of the word and of its base form (the jar's
  ``SynonymDictionary``: irregular forms from the exception list, else WordNet's suffix
  rules, first rule giving a known word wins).
* ``para``: the word's id in the paraphrase table (-1: absent).
* ``function``: in the function-word list.
"""
from __future__ import annotations

from dataclasses import dataclass

from .java import lower, string_hash
from .resources import MeteorResources
from .score import word_deltas
from .stemmer import stem

# WordNet 3 morphology as the jar applies it: (suffix, replacement), tried in this order.
_MORPH = (
    ("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
    ("men", "man"), ("ies", "y"),
    ("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", ""),
    ("er", ""), ("est", ""), ("er", "e"), ("est", "e"),
)
_EMPTY: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class WordInfo:
    key: int
    stem_key: int
    synsets: frozenset[int]
    para: int
    function: bool
    #: key, stem key and synsets tagged apart (``4k``, ``4k + 1``, ``4k + 2``): two words can
    #: match as one-word matches only if their relations intersect.
    relations: frozenset[int]
    #: ``(key, stem_key, synsets, function, relations, delta)``, delta the word's share of
    #: the weighted length (:func:`.score.word_deltas`): what a line keeps per word.
    row: tuple


def _utf16_len(s: str) -> int:
    return len(s) + sum(1 for c in s if ord(c) > 0xFFFF) if not s.isascii() else len(s)


class WordTable:
    """Memoised :class:`WordInfo` for the words of one resource set."""

    def __init__(self, res: MeteorResources) -> None:
        self.res = res
        self._info: dict[str, WordInfo] = {}

    def _synsets(self, word: str) -> frozenset[int]:
        return self.res.synsets.get(word, _EMPTY)

    def _morph(self, word: str) -> str:
        if word.endswith("ss") or _utf16_len(word) <= 2:
            return word
        for suffix, repl in _MORPH:
            if word.endswith(suffix):
                cand = word[: len(word) - len(suffix)] + repl
                if cand in self.res.synsets:
                    return cand
        return ""

    def _stem_synsets(self, word: str) -> frozenset[int]:
        bases = self.res.exceptions.get(word)
        if bases is not None:
            out: set[int] = set()
            for b in bases:
                out |= self._synsets(b)
            return frozenset(out)
        return self._synsets(self._morph(word))

    def info(self, word: str) -> WordInfo:
        got = self._info.get(word)
        if got is None:
            syn = self._synsets(word) | self._stem_synsets(word)
            key, stem_key = string_hash(word), string_hash(stem(word))
            function = lower(word) in self.res.function_words
            relations = frozenset([4 * key, 4 * stem_key + 1, *(4 * x + 2 for x in syn)])
            got = WordInfo(
                key=key,
                stem_key=stem_key,
                synsets=syn,
                para=self.res.paraphrase.vocab.get(word, -1),
                function=function,
                relations=relations,
                row=(key, stem_key, syn, function, relations, word_deltas([function])[0]),
            )
            self._info[word] = got
        return got
