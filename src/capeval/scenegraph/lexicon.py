"""The WordNet facts SPICE-py asks about a word, memoised, on disk too.

Three questions reach WordNet: the synsets of a concept (synonym matching and graph merging,
:mod:`.synonyms`), whether a word is a verb lemma and whether WordNet knows it at all (lemma
repair, :mod:`.lemmas`). They are read from the database files by :class:`~.wnfacts.WordNetFiles`,
which answers as NLTK's reader does without NLTK's seconds of start-up (a reader object passed
as ``wordnet`` is asked instead). The answers are also kept per word in a
:class:`~.parsestore.DiskStore` keyed by the WordNet database, and the files are opened only
when a word is missing. Each answer is computed exactly as the uncached functions compute it.
"""
from __future__ import annotations

import threading

from .parsestore import DiskStore
from .wnfacts import WordNetFiles

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
        """The database: the reader passed in, or the files of the configured WordNet."""
        if self._wn is None:
            from ..resources.wordnet import prepare_nltk_data
            from .wnfacts import WordNetFiles

            self._wn = WordNetFiles(prepare_nltk_data(self._path) / "corpora" / "wordnet")
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
                    hit = wn.facts(word) if isinstance(wn, WordNetFiles) else reader_facts(wn, word)
                    table[word] = self._new[word] = hit
        return hit

    def is_verb(self, word: str) -> bool:
        return self.facts(word)[0]

    def known(self, word: str) -> bool:
        return self.facts(word)[1]

    def synsets(self, word: str) -> frozenset:
        # Graph building asks this for every tuple element: a table hit skips a call.
        hit = self._facts.get(word) if self._facts is not None else None
        return (hit or self.facts(word))[2]

    def after_fork(self) -> None:
        """In a forked worker: own locks and own WordNet files. A forked process shares its
        parent's open file descriptors, and with them the file offsets NLTK seeks before each
        read, so workers reading through inherited files would read each other's lines
        (:class:`WordNetFiles` reads through memory maps, which carry no offset)."""
        self._lock = threading.Lock()
        self._store = None  # the parent's SQLite connection must not be used across a fork
        wn = self._wn
        if wn is not None and not isinstance(wn, WordNetFiles):
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


def reader_facts(wn, word: str) -> Facts:
    """The facts of ``word`` asked of an NLTK-style WordNet reader."""
    # lemmas() keeps only lemma names equal to the query, so inflections do not count as
    # verbs; synsets() applies WordNet's morphology (see lemmas.py).
    key = word.strip().lower().replace(" ", "_")
    syn = frozenset(s.name() for s in wn.synsets(key)) if key else frozenset()
    return bool(wn.lemmas(word, pos="v")), bool(wn.synsets(word)), syn
