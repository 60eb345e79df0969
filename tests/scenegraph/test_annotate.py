"""The memoised tail of the spaCy pipeline (attribute ruler, lemmatizer) gives every token what
running the whole pipeline on the doc gives, including where a multi-token ruler pattern
matches ("there is", "gon na") and on texts seen in another order."""
from __future__ import annotations

import pytest

from tests._needs import SPACY

pytestmark = pytest.mark.needs(*SPACY)

TEXTS = [
    "a man riding a horse on the beach",
    "there is a dog sitting next to a red car",
    "two people are gon na ride their bikes",
    "a woman who is holding an umbrella walks in the rain",
    "there are three cats in front of the house . a cat is black",
    "the wooded area has outstretched branches",
    "a man is riding a horse on the beach",
    "y' all let 's go",
    "",
    "  a  dog  ",
    "A Dog Rides A Skateboard",
    "a man riding a horse on the beach",
]


@pytest.fixture(scope="module")
def nlp():
    from capeval.scenegraph.parser import load_spacy

    return load_spacy()


def _whole_pipeline(nlp, texts, lemma_fix=None):
    """What the rows were before the memo: every component on every doc, read token by token."""
    out = []
    for doc in nlp.pipe(texts):
        sents = []
        for sent in doc.sents:
            words, heads, deps = [], [], []
            for t in sent:
                lemma = (t.lemma_ or t.text).strip().lower()
                if lemma_fix is not None:
                    lemma = lemma_fix(t.text, lemma, t.tag_)
                words.append((t.i - sent.start, t.text, lemma, t.tag_))
                heads.append(t.head.i - sent.start)
                deps.append(t.dep_)
            sents.append((words, heads, deps))
        out.append(sents)
    return out


def _plain(rows):
    return [[([(w.i, w.text, w.lemma, w.tag) for w in words], heads, deps) for words, heads, deps in doc]
            for doc in rows]


def test_memoised_tail_reads_what_the_whole_pipeline_reads(nlp):
    from capeval.scenegraph.annotate import Annotator

    fix = lambda word, lemma, tag: lemma + "!" if tag == "NNS" else lemma  # noqa: E731
    ann = Annotator(nlp, fix)
    assert ann.memo_enabled
    texts = TEXTS + TEXTS[::-1]
    got = _plain(list(ann.sentences(texts, batch_size=4)))
    assert got == _whole_pipeline(nlp, texts, fix)
    # Repeated texts come from the memo without running the tail, except where a multi-token
    # pattern matches.
    runs = ann.tail_runs
    again = _plain(list(ann.sentences(["a man riding a horse on the beach", "there is a dog"], 8)))
    assert again == _whole_pipeline(nlp, ["a man riding a horse on the beach", "there is a dog"], fix)
    assert ann.tail_runs == runs + 1


def test_memo_off_and_unknown_tails_run_the_whole_pipeline(nlp):
    from capeval.scenegraph.annotate import Annotator

    off = Annotator(nlp, memo=False)
    assert not off.memo_enabled
    assert _plain(list(off.sentences(TEXTS, 16))) == _whole_pipeline(nlp, TEXTS)


def test_multi_token_triggers_cover_every_pattern(nlp):
    from capeval.scenegraph.annotate import _triggers

    ruler = nlp.get_pipe("attribute_ruler")
    multi = [p for e in ruler.patterns for p in e["patterns"] if len(p) > 1]
    trig = _triggers(nlp.vocab, multi)
    assert trig is not None and len(trig) == len(multi)
    assert _triggers(nlp.vocab, [[{"LOWER": {"REGEX": "^a"}}, {"IS_PUNCT": True}]]) is None
