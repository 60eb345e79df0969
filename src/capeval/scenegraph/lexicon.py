"""The WordNet facts SPICE-py asks about a word, memoised, on disk too.

Three questions reach WordNet: the synsets of a concept (synonym matching and graph merging,
:mod:`.synonyms`), whether a word is a verb lemma and whether WordNet knows it at all (lemma
repair, :mod:`.lemmas`). Loading NLTK's reader takes seconds, more than scoring a system
whose captions are already parsed, so the answers are kept per word in a
:class:`~.parsestore.DiskStore` keyed by the WordNet database, and the reader loads only when a
word is missing. Each answer is computed exactly as the uncached functions compute it.
"""
from __future__ import annotations

import threading

from .parsestore import DiskStore

Facts = tuple[bool, bool, frozenset]  # (is a verb lemma, known in any POS, synset names)


class CachedWordNet:
    """``is_verb(word)``, ``known(word)``, ``synsets(word)`` over WordNet 3.0, loaded lazily."""

    def __init__(self, wordnet_path=None, store: DiskStore | None = None, wordnet=None):
        self._path = wordnet_path
        self._wn = wordnet
        self._store = store
        self._facts: dict[str, Facts] | None = None
        self._new: dict[str, Facts] = {}
        self._lock = threading.Lock()
        self.loaded_wordnet = wordnet is not None

    def _table(self) -> dict[str, Facts]:
        if self._facts is None:
            facts: dict[str, Facts] = {}
            if self._store is not None:
                for word, (verb, known, syn) in self._store.items().items():
                    facts[word] = (verb, known, frozenset(syn))
            self._facts = facts
        return self._facts

    def size(self) -> int:
        return len(self._table())

    def wordnet(self):
        if self._wn is None:
            from ..resources.wordnet import load_wordnet

            self._wn = load_wordnet(self._path)
            self.loaded_wordnet = True
        return self._wn

    def facts(self, word: str) -> Facts:
        table = self._table()
        hit = table.get(word)
        if hit is None:
            with self._lock:
                hit = table.get(word)
                if hit is None:
                    wn = self.wordnet()
                    # lemmas() keeps only lemma names equal to the query, so inflections do not
                    # count as verbs; synsets() applies WordNet's morphology (see lemmas.py).
                    key = word.strip().lower().replace(" ", "_")
                    syn = frozenset(s.name() for s in wn.synsets(key)) if key else frozenset()
                    hit = (bool(wn.lemmas(word, pos="v")), bool(wn.synsets(word)), syn)
                    table[word] = self._new[word] = hit
        return hit

    def is_verb(self, word: str) -> bool:
        return self.facts(word)[0]

    def known(self, word: str) -> bool:
        return self.facts(word)[1]

    def synsets(self, word: str) -> frozenset:
        return self.facts(word)[2]

    def after_fork(self) -> None:
        """In a forked worker: own locks and own WordNet files. A forked process shares its
        parent's open file descriptors, and with them the file offsets NLTK seeks before each
        read, so workers reading through inherited files would read each other's lines."""
        self._lock = threading.Lock()
        self._store = None  # the parent's SQLite connection must not be used across a fork
        wn = self._wn
        if wn is not None:
            if hasattr(wn, "_call_lock"):  # capeval.resources.wordnet's serialising wrapper
                wn._call_lock = threading.RLock()
            reader = getattr(wn, "_reader", wn)
            # NLTK reopens a data file on first use after this; the parent's stay untouched.
            reader._data_file_map = {}
            reader._key_count_file = reader._key_synset_file = None

    def take_new(self) -> dict[str, Facts]:
        """The answers computed since the last call (a forked parser hands them back)."""
        with self._lock:
            new, self._new = self._new, {}
        return new

    def add(self, facts: dict[str, Facts]) -> None:
        table = self._table()
        with self._lock:
            for word, f in facts.items():
                if word not in table:
                    table[word] = self._new[word] = f

    def flush(self) -> None:
        """Write the new answers to the store."""
        new = self.take_new()
        if self._store is not None and new:
            self._store.put((w, [v, k, sorted(s)]) for w, (v, k, s) in new.items())
