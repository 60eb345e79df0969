"""Offline backend: questions from the spaCy parse, answers from a context's scene graph."""
from __future__ import annotations

import numpy as np
import pytest

from capeval.qace.graphqa import Context, SceneGraphReader, WordMatcher
from capeval.qace.types import Question
from capeval.scenegraph.synonyms import table_synsets
from tests._needs import SPACY, requires


@pytest.fixture(scope="module")
@requires(*SPACY)
def nlp():
    from capeval.scenegraph.parser import load_spacy

    return load_spacy()


def _fix(word, lemma, tag):
    return "ride" if word == "riding" else lemma  # the scene-graph repair, without WordNet


def test_questions_and_slots_from_the_parse(nlp):
    from capeval.qace.qgen import questions_from_doc

    qs = questions_from_doc(nlp("Two men are riding brown horses on the ground."), frozenset({"the", "are", "on"}), _fix)
    got = [(q.kind, q.answer, q.slot) for q in qs]
    assert got == [
        ("entity", "two man", ("subject", "ride", "horse")),
        ("count", "two", ("count", "man")),
        ("entity", "brown horse", ("object", "man", "ride")),
        ("attribute", "brown", ("attribute", "horse", "color")),
        ("entity", "ground", ("object", "man", "ride on")),
    ]
    assert qs[2].text.startswith("Two men are riding what") and qs[2].text.endswith("?")


def test_answer_order_is_text_order_and_repeats_are_dropped(nlp):
    from capeval.qace.extract import answer_spans

    spans = answer_spans(nlp("A dog and a cat chase a dog."), frozenset({"a", "and"}))
    assert [s.answer for s in spans] == ["dog", "cat"]


CTX = Context.from_tuples([("man",), ("man", "ride", "horse"), ("horse", "brown"), ("horse", "two"),
                           ("man", "on", "beach"), ("dog",)])


def _reader(table=None, vectors=None):
    return SceneGraphReader(WordMatcher(table_synsets(table or {}), vectors, 0.8))


def test_slot_fillers_with_attributes_counts_first():
    r = _reader()
    q = Question("what is the man riding?", "horse", "entity", "a horse", ("object", "man", "ride"))
    assert r.answer(q, CTX).text == "two brown horse"
    q = Question("who rides a horse?", "man", "entity", "a man", ("subject", "ride", "horse"))
    assert r.answer(q, CTX).text == "man"
    assert r.answer(Question("how many?", "three", "count", "", ("count", "horse")), CTX).text == "two"
    assert r.answer(Question("color?", "black", "attribute", "", ("attribute", "horse", "color")), CTX).text == "brown"


def test_unanswerable_and_synonyms():
    r = _reader()
    q = Question("what is the cat riding?", "camel", "entity", "", ("object", "cat", "fly"))
    a = r.answer(q, CTX)
    assert a.text == "" and a.answerability == 0.0
    assert r.answer(Question("color?", "red", "attribute", "", ("attribute", "dog", "color")), CTX).text == ""
    # the subject matches through a shared synset
    syn = _reader({"guy": {"man.n.01"}, "man": {"man.n.01"}})
    q = Question("what is the guy riding?", "horse", "entity", "", ("object", "guy", "ride"))
    assert syn.answer(q, CTX).text == "two brown horse"


class Vec:
    def __init__(self, table):
        self.t = table

    def __contains__(self, w):
        return w in self.t

    def vectors(self, words, norm=False):
        m = np.array([self.t[w] for w in words], dtype=float)
        return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_vector_matching_threshold():
    m = WordMatcher(None, Vec({"pony": [1.0, 0.1], "horse": [1.0, 0.0], "car": [0.0, 1.0]}), 0.8)
    assert m.same("pony", "horse") and not m.same("car", "horse")
    assert m.same_predicate("ride on", "ride on") and not m.same_predicate("ride on", "ride in")
