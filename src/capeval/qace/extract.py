"""Answer candidates: spaCy noun chunks of the caption, in text order.

The paper's code also takes named entities and deduplicates through a Python set, so its order
is not deterministic (docs/QACE.md, The paper's public code); here the order is the chunks'
order in the caption and a repeated answer keeps its first chunk. Answers are lower-cased
lemmas with stop words removed (lemmas, so that they compare with the scene-graph answers,
which are lemmas).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A noun chunk: its text, the lemma answer, and its head token (a spaCy Token)."""

    text: str
    answer: str
    head: object
    tokens: tuple


def lemma_of(tok, lemma_fix=None) -> str:
    lemma = tok.lemma_.lower() if tok.lemma_ else tok.lower_
    if lemma_fix is not None:
        lemma = lemma_fix(tok.lower_, lemma, tok.tag_)
    return lemma


def answer_spans(doc, stopwords: frozenset, lemma_fix=None) -> list[Span]:
    """Noun chunks of ``doc`` whose answer (non-stop-word lemmas) is not empty, first occurrence."""
    seen: set[str] = set()
    out: list[Span] = []
    for chunk in doc.noun_chunks:
        toks = tuple(t for t in chunk if not t.is_punct and t.lower_ not in stopwords)
        answer = " ".join(lemma_of(t, lemma_fix) for t in toks)
        if not answer or answer in seen:
            continue
        seen.add(answer)
        out.append(Span(chunk.text, answer, chunk.root, toks))
    return out
