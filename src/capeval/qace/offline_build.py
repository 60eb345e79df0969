"""Builds (once per process and configuration) the offline QACE components."""
from __future__ import annotations

import threading

_built: dict[tuple, tuple] = {}
_lock = threading.Lock()


def offline_components(model: str | None, stopwords: str, vectors: str | None, threshold: float,
                       wordnet: str | None = None, batch_size: int = 512):
    """(question generator, reader, fields for the signature); spaCy/WordNet load once."""
    key = (model, stopwords, vectors, threshold, wordnet, batch_size)
    with _lock:
        hit = _built.get(key)
        if hit is None:
            from ..resources.wordnet import WORDNET_VERSION, load_wordnet
            from ..scenegraph.parser import DEFAULT_MODEL, TupleParser
            from ..scenegraph.synonyms import WordNetSynsets
            from ..text.stopwords import get_stopwords
            from .graphqa import WordMatcher
            from .offline import ParseQuestionGenerator, SceneGraphQA, lemma_fixer

            wn = load_wordnet(wordnet)
            fix, is_verb, known = lemma_fixer(wn)
            parser = TupleParser(model or DEFAULT_MODEL, is_verb=is_verb, known=known, batch_size=batch_size)
            stop = get_stopwords(stopwords)
            vec = None
            if vectors:
                from ..resources.vectors import load_vectors

                vec = load_vectors(vectors)
            matcher = WordMatcher(WordNetSynsets(wn), vec, threshold)
            fields = {"qg": "parse", "qa": "scenegraph", "parser": parser.model_id,
                      "wordnet": WORDNET_VERSION, "stop": stop.id,
                      "vec": f"{vectors}@{threshold:g}" if vectors else "none"}
            hit = _built[key] = (ParseQuestionGenerator(parser, stop.words, fix), SceneGraphQA(parser, matcher), fields)
    return hit
