"""The offline backend: spaCy question generation + scene-graph reading (runs with no network).

One spaCy pipeline and one WordNet serve both sides; every distinct caption is parsed once per
process (references through :class:`capeval.scenegraph.parser.TupleParser`'s cache), in
``nlp.pipe`` batches.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence

from .graphqa import Context, SceneGraphReader, WordMatcher
from .qgen import questions_from_doc
from .types import Answer, Question


class ParseQuestionGenerator:
    """Candidates -> questions from the spaCy parse (variant ``parse``)."""

    id = "parse"

    def __init__(self, parser, stopwords: frozenset, lemma_fix=None):
        self._parser = parser
        self._stop = stopwords
        self._lemma_fix = lemma_fix
        self._cache: dict[str, list[Question]] = {}
        self._lock = threading.Lock()

    def generate(self, candidates: Sequence[str]) -> list[list[Question]]:
        with self._lock:
            todo = [c for c in dict.fromkeys(candidates) if c not in self._cache]
            if todo:
                nlp = self._parser.nlp
                for text, doc in zip(todo, nlp.pipe(todo, batch_size=self._parser.batch_size)):
                    self._cache[text] = questions_from_doc(doc, self._stop, self._lemma_fix)
            return [self._cache[c] for c in candidates]


class SceneGraphQA:
    """Questions x contexts (tuples of reference captions) -> answers (variant ``scenegraph``)."""

    id = "scenegraph"

    def __init__(self, parser, matcher: WordMatcher):
        self._parser = parser
        self._reader = SceneGraphReader(matcher)
        self._contexts: dict[tuple[str, ...], Context] = {}
        self._lock = threading.Lock()

    def prepare(self, contexts: Sequence[tuple[str, ...]]) -> None:
        """Parse every distinct sentence of these contexts in one batch."""
        with self._lock:
            todo = [c for c in dict.fromkeys(contexts) if c not in self._contexts]
            flat = list(dict.fromkeys(s for c in todo for s in c))
            parsed = dict(zip(flat, self._parser.parse(flat)))
            for c in todo:
                self._contexts[c] = Context.from_tuples([t for s in c for t in parsed[s]])

    def answer(self, items: Sequence[tuple[Question, tuple[str, ...]]]) -> list[Answer]:
        self.prepare([c for _, c in items])
        with self._lock:
            return [self._reader.answer(q, self._contexts[c]) for q, c in items]


def lemma_fixer(wordnet):
    """The scene-graph parser's lemma repairs ("riding" -> "ride", not "rid") for our own parse."""
    from ..scenegraph.lemmas import (repair_unknown_lemma, repair_verb_lemma, wordnet_known_test,
                                     wordnet_verb_test)

    is_verb, known = wordnet_verb_test(wordnet), wordnet_known_test(wordnet)

    def fix(word: str, lemma: str, tag: str) -> str:
        if tag.startswith("VB"):
            lemma = repair_verb_lemma(word, lemma, is_verb)
        return repair_unknown_lemma(word, lemma, known)

    return fix, is_verb, known
