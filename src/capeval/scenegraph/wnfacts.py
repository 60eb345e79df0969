"""The three WordNet 3.0 facts SPICE-py asks about a word, read straight from the database
files, answered exactly as NLTK's ``WordNetCorpusReader`` answers them.

:mod:`.lexicon` asks, per word: is it a verb lemma (``bool(wn.lemmas(word, pos="v"))``), does
WordNet know it (``bool(wn.synsets(word))``), and the names of its synsets
(``wn.synsets(key)``, e.g. ``dog.n.01``). NLTK builds its whole lemma table at start-up, after
importing most of NLTK (together 2-3 s), and a run often needs a few hundred words. Here the
index files are read as text and split into lines (no parsing), a line is parsed when its
lemma is first asked about, and a synset's data line is read from a memory map by its byte
offset (shared safely by forked workers). The logic follows NLTK's (3.9-3.10):

* morphology (``_morphy``): a word in a part of speech's exception list gives the word and its
  listed base forms, otherwise the word and the forms the detachment rules give (one pass);
  the forms that the index holds for that part of speech are kept, in order, without repeats;
* ``synsets(word)``: over nouns, verbs, adjectives, adverbs, for each form, the index line's
  synset offsets in order;
* a synset's name: its first lemma, lower-cased, its type (``s`` for an adjective satellite)
  and the 1-based position of its offset in that lemma's index line, where the list of an
  ``s`` synset is the lemma's adjective offsets that are satellites;
* a verb lemma: some verb synset of the word's forms has a lemma whose name (syntactic
  marker such as ``(a)`` removed), lower-cased, is the lower-cased word.

tests/scenegraph/test_wnfacts.py compares every answer with NLTK's on thousands of words.
"""
from __future__ import annotations

import mmap
import re
from pathlib import Path

Facts = tuple[bool, bool, frozenset]

_POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
_POS_ORDER = ("n", "v", "a", "r")  # NLTK's POS_LIST, the order of synsets(word)
_SUBSTITUTIONS = {
    "n": (("s", ""), ("ses", "s"), ("ves", "f"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
          ("shes", "sh"), ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"),
          ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}
_MARKER = re.compile(r"(.*?)(\([^()]*\))?$")


class WordNetFiles:
    """``facts(word)`` -> (is a verb lemma, known in any part of speech, synset names)."""

    def __init__(self, directory: str | Path):
        directory = Path(directory)
        self._lines: dict[str, dict[str, str]] = {}
        self._exceptions: dict[str, dict[str, list[str]]] = {}
        self._data: dict[str, mmap.mmap] = {}
        for pos, name in _POS_FILES.items():
            with open(directory / f"index.{name}", encoding="utf8") as f:
                # NLTK skips the licence lines (they start with a space); a repeated lemma
                # keeps its last line, as NLTK's table does.
                self._lines[pos] = {line[:line.index(" ")]: line for line in f.read().splitlines()
                                    if line and not line.startswith(" ")}
            exc = {}
            path = directory / f"{name}.exc"
            if path.is_file():
                with open(path, encoding="utf8") as f:
                    for line in f:
                        terms = line.split()
                        exc[terms[0]] = terms[1:]
            self._exceptions[pos] = exc
            with open(directory / f"data.{name}", "rb") as f:
                self._data[pos] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self._offsets: dict[tuple[str, str], list[int] | None] = {}
        self._synsets: dict[tuple[str, int], tuple[str, list[str]]] = {}
        self._names: dict[tuple[str, int], str] = {}

    def offsets(self, lemma: str, pos: str) -> list[int] | None:
        """The synset offsets of ``lemma``'s line in index.<pos>, or None when it has none."""
        key = (lemma, pos)
        if key not in self._offsets:
            line = self._lines[pos].get(lemma)
            out = None
            if line is not None:
                fields = line.split()
                n_synsets, n_pointers = int(fields[2]), int(fields[3])
                start = 4 + n_pointers + 2
                out = [int(x) for x in fields[start:start + n_synsets]]
            self._offsets[key] = out
        return self._offsets[key]

    def synset(self, pos: str, offset: int) -> tuple[str, list[str]]:
        """(synset type, lemma names) of the data line at ``offset`` of data.<pos>."""
        key = (pos, offset)
        hit = self._synsets.get(key)
        if hit is None:
            data = self._data[pos]
            end = data.find(b"\n", offset)
            fields = data[offset:end if end >= 0 else len(data)].decode("utf8").split("|", 1)[0].split()
            if not fields[0].isdigit() or int(fields[0]) != offset:
                raise ValueError(f"WordNet data.{_POS_FILES[pos]}: no synset at offset {offset}")
            n_words = int(fields[3], 16)
            names = [_MARKER.match(fields[4 + 2 * k]).group(1) for k in range(n_words)]
            hit = self._synsets[key] = (fields[2], names)
        return hit

    def morphy(self, form: str, pos: str) -> list[str]:
        exceptions = self._exceptions[pos]
        if form in exceptions:
            forms = exceptions[form]
        else:
            forms = [form[:-len(old)] + new for old, new in _SUBSTITUTIONS[pos] if form.endswith(old)]
        out: list[str] = []
        for f in [form] + forms:
            if f not in out and self.offsets(f, pos) is not None:
                out.append(f)
        return out

    def synset_ids(self, word: str, parts=_POS_ORDER) -> list[tuple[str, int]]:
        """(part of speech, offset) of each of NLTK's ``synsets(word)``, in its order."""
        word = word.lower()
        return [(p, off) for p in parts for form in self.morphy(word, p) for off in self.offsets(form, p)]

    def name(self, pos: str, offset: int) -> str:
        key = (pos, offset)
        hit = self._names.get(key)
        if hit is None:
            kind, lemmas = self.synset(pos, offset)
            first = lemmas[0].lower()
            if kind == "s":
                listed = [o for o in self.offsets(first, "a") or () if self.synset("a", o)[0] == "s"]
            else:
                listed = self.offsets(first, kind) or []
            hit = self._names[key] = f"{first}.{kind}.{listed.index(offset) + 1:02d}"
        return hit

    def facts(self, word: str) -> Facts:
        low = word.lower()
        is_verb = any(name.lower() == low for p, off in self.synset_ids(word, ("v",))
                      for name in self.synset(p, off)[1])
        known = bool(self.synset_ids(word))
        key = word.strip().lower().replace(" ", "_")
        syn = frozenset(self.name(p, off) for p, off in self.synset_ids(key)) if key else frozenset()
        return is_verb, known, syn
