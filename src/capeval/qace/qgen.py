"""Offline question generation from the spaCy parse (variant ``parse``).

Not the paper's T5 generator: a question is read off the dependency parse. For a noun chunk the
answer's syntactic role picks the question and its structured *slot*:

* subject of a verb   -> "what is riding a horse?"       slot ("subject", predicate, object)
* object of a verb    -> "what is the man riding?"       slot ("object", subject, predicate)
* object of a preposition -> "the man is riding on what?" slot ("object", governor, "verb prep")
* anything else       -> "what is in the image?"         slot ("exists",)

Every chunk also yields one question per counting modifier ("how many horses?", slot
("count", noun)) and per adjective ("what color is the dog?", slot ("attribute", noun, type)), so
a wrong count or attribute gets its own row. The text of a question is the clause with the answer
replaced by a wh-word (for the table); the offline QA reads only the slot.
"""
from __future__ import annotations

from ..scenegraph.graph import COMMON_COLORS, SIZE_ADJECTIVES, SMALL_NUMBERS
from .extract import Span, answer_spans, lemma_of
from .types import Question

_SUBJ = ("nsubj", "nsubjpass")
_OBJ = ("dobj", "obj", "attr", "oprd")


def _subject_of(verb):
    for c in verb.children:
        if c.dep_ in _SUBJ:
            return c
    if verb.dep_ in ("acl", "relcl") and verb.head.pos_ in ("NOUN", "PROPN", "PRON"):
        return verb.head  # "a man riding a horse": the man rides
    if verb.dep_ == "conj":
        return _subject_of(verb.head)
    return None


def _predicate(verb, lemma_fix) -> str:
    """Verb lemma plus particle; a copula contributes nothing (SPICE's rule: "is in" -> "in")."""
    if verb.lemma_ == "be":
        return ""
    words = [lemma_of(verb, lemma_fix)]
    words += [c.lower_ for c in verb.children if c.dep_ == "prt"]
    return " ".join(words)


def _first_object(verb, lemma_fix):
    """(predicate, object token) of a verb's first direct or prepositional object."""
    pred = _predicate(verb, lemma_fix)
    for c in verb.children:
        if c.dep_ in _OBJ and c.pos_ in ("NOUN", "PROPN"):
            return pred, c
    for c in verb.children:
        if c.dep_ == "prep":
            for o in c.children:
                if o.dep_ == "pobj":
                    return " ".join(w for w in (pred, c.lower_) if w), o
    return pred, None


def _clause_without(span: Span, wh: str) -> str:
    """The head's clause with the answer chunk replaced by ``wh`` (text for the table)."""
    head = span.head
    root = head
    while root.dep_ not in ("ROOT",) and root.head is not root and root.pos_ not in ("VERB", "AUX"):
        root = root.head
    sub = list(root.subtree) if root is not head else list(head.sent)
    chunk_ids = {t.i for t in head.subtree} if head.dep_ in _SUBJ + _OBJ + ("pobj",) else {t.i for t in span.tokens} | {head.i}
    words, placed = [], False
    for t in sub:
        if t.i in chunk_ids:
            if not placed:
                words.append(wh)
                placed = True
            continue
        if t.is_punct:
            continue
        words.append(t.text)
    return " ".join(words) + "?"


def entity_question(span: Span, lemma_fix=None) -> Question:
    head = span.head
    h = lemma_of(head, lemma_fix)
    dep = head.dep_
    wh = "who" if h in ("man", "woman", "person", "boy", "girl", "child", "people", "kid", "lady", "guy") else "what"
    if dep in _SUBJ and head.head.pos_ in ("VERB", "AUX"):
        pred, obj = _first_object(head.head, lemma_fix)
        if obj is not None:
            slot = ("subject", pred, lemma_of(obj, lemma_fix))
        else:
            slot = ("subject", _predicate(head.head, lemma_fix) or "be", "")
        return Question(_clause_without(span, wh), span.answer, "entity", span.text, slot)
    if dep in _OBJ and head.head.pos_ in ("VERB", "AUX"):
        subj = _subject_of(head.head)
        if subj is not None:
            slot = ("object", lemma_of(subj, lemma_fix), _predicate(head.head, lemma_fix))
            return Question(_clause_without(span, wh), span.answer, "entity", span.text, slot)
    if dep == "pobj" and head.head.dep_ == "prep":
        prep = head.head
        gov = prep.head
        if gov.pos_ in ("VERB", "AUX"):
            subj = _subject_of(gov)
            if subj is not None:
                pred = " ".join(w for w in (_predicate(gov, lemma_fix), prep.lower_) if w)
                slot = ("object", lemma_of(subj, lemma_fix), pred)
                return Question(_clause_without(span, wh), span.answer, "entity", span.text, slot)
        elif gov.pos_ in ("NOUN", "PROPN", "PRON"):
            slot = ("object", lemma_of(gov, lemma_fix), prep.lower_)
            return Question(f"what is the {gov.text} {prep.lower_}?", span.answer, "entity", span.text, slot)
    return Question(f"what is there ({span.text})?", span.answer, "entity", span.text, ("exists",))


def _attribute_type(adj: str) -> str:
    if adj in COMMON_COLORS:
        return "color"
    if adj in SIZE_ADJECTIVES:
        return "size"
    return "kind"


def modifier_questions(span: Span, lemma_fix=None) -> list[Question]:
    head = span.head
    noun = lemma_of(head, lemma_fix)
    out: list[Question] = []
    for c in head.children:
        word = c.lower_
        if c.dep_ == "nummod" or (c.dep_ in ("det", "amod") and word in SMALL_NUMBERS):
            out.append(Question(f"how many {head.text} are there?", word, "count", span.text, ("count", noun)))
        elif c.dep_ == "amod" and c.pos_ == "ADJ" and word not in SMALL_NUMBERS:
            kind = _attribute_type(word)
            text = {"color": f"what color is the {head.text}?", "size": f"what size is the {head.text}?"}.get(
                kind, f"what kind of {head.text} is it?")
            out.append(Question(text, lemma_of(c, lemma_fix), "attribute", span.text, ("attribute", noun, kind)))
    return out


def questions_from_doc(doc, stopwords: frozenset, lemma_fix=None) -> list[Question]:
    """Entity question per answer span, then its count/attribute questions, in text order;
    a question text asked twice keeps its first occurrence, as in the paper's code
    (docs/QACE.md, The paper's public code)."""
    out: list[Question] = []
    seen: set[tuple[str, str]] = set()
    for span in answer_spans(doc, stopwords, lemma_fix):
        for q in [entity_question(span, lemma_fix)] + modifier_questions(span, lemma_fix):
            key = (q.text, q.answer)
            if key not in seen:
                seen.add(key)
                out.append(q)
    return out
