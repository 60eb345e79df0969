"""Paragraph perturbations (detailed captions) and the coco-paragraph source."""
from __future__ import annotations

import numpy as np
import pytest

from capeval.stress import paragraphs as R
from capeval.stress import rules
from capeval.stress.items import PARAGRAPH_SENTENCES, as_sentence, benchmark_items
from capeval.stress.suite import _perturbation_names

PARA = "A dog runs on grass. A cat sleeps on a sofa. Two men ride bikes. A red car is parked."
OTHER = "A boat floats on a lake. A bird sits on a branch."


def _ctx(text=PARA, donors=((None, PARA), (None, OTHER)), key="p0"):
    return rules.Context(key, text, (), (), None, donors)


def _run(rule, ctx, seed=0):
    return rule(ctx, rules.rule_rng(seed, rule.__name__, ctx.key))


def test_sentences_split_at_sentence_ends_only():
    assert R.sentences(PARA) == ["A dog runs on grass.", "A cat sleeps on a sofa.", "Two men ride bikes.",
                                 "A red car is parked."]
    assert R.sentences("One, two. Three!  Four? five") == ["One, two.", "Three!", "Four?", "five"]


@pytest.mark.parametrize("seed", range(20))
def test_insert_adds_one_sentence_of_another_item(seed):
    out = R.sentences(_run(R.sentence_insert, _ctx(), seed))
    own = R.sentences(PARA)
    assert len(out) == len(own) + 1
    new = [s for s in out if s not in own]
    assert len(new) == 1 and new[0] in R.sentences(OTHER)
    assert [s for s in out if s in own] == own  # the others keep their order
    assert out[0] == own[0]  # never before the first sentence


@pytest.mark.parametrize("seed", range(20))
def test_drop_removes_exactly_one_sentence(seed):
    out = R.sentences(_run(R.sentence_drop, _ctx(), seed))
    own = R.sentences(PARA)
    assert len(out) == len(own) - 1 and all(s in own for s in out)


@pytest.mark.parametrize("seed", range(20))
def test_reorder_keeps_the_sentences_in_another_order(seed):
    out = R.sentences(_run(R.sentence_reorder, _ctx(), seed))
    assert sorted(out) == sorted(R.sentences(PARA)) and out != R.sentences(PARA)


@pytest.mark.parametrize("seed", range(20))
def test_repeat_says_one_sentence_twice_in_a_row(seed):
    out = R.sentences(_run(R.sentence_repeat, _ctx(), seed))
    assert len(out) == 5 and sum(a == b for a, b in zip(out, out[1:])) == 1
    assert list(dict.fromkeys(out)) == R.sentences(PARA)


def test_tail_cut_removes_the_last_third_of_the_words():
    out = _run(R.tail_cut, _ctx())
    words = PARA.split()
    assert out.split() == words[: len(words) - len(words) // 3][:-1] + [words[len(words) - len(words) // 3 - 1].rstrip(".")]
    assert not out.endswith(".")


def test_rules_that_cannot_apply_say_why():
    one = _ctx("A dog.", donors=((None, "A dog."),))
    assert isinstance(_run(R.sentence_drop, one), rules.Skip)
    assert isinstance(_run(R.sentence_reorder, one), rules.Skip)
    assert isinstance(_run(R.sentence_insert, one), rules.Skip)  # no other item's sentence
    assert isinstance(_run(R.tail_cut, _ctx("Two words.")), rules.Skip)


def test_default_sets_follow_the_source():
    caption = _perturbation_names(None)
    paragraph = _perturbation_names(None, paragraphs=True)
    assert "object_swap" in caption and "sentence_drop" not in caption
    assert paragraph == ["sentence_insert", "sentence_drop", "paragraph_object_swap", "sentence_reorder",
                         "sentence_repeat", "tail_cut"]
    assert _perturbation_names("tail_cut,negation") == ["tail_cut", "negation"]  # any rule may be asked for


def test_as_sentence_makes_one_sentence_of_a_caption():
    assert as_sentence("a man rides a bike .") == "A man rides a bike."
    assert as_sentence("A dog . It runs !") == "A dog, It runs."
    assert as_sentence("  two cats , sleeping  ") == "Two cats, sleeping."


@pytest.mark.needs("data")
def test_coco_paragraph_items_are_ten_captions_with_three_reference_paragraphs():
    items = benchmark_items("coco-paragraph", n=3, seed=7)
    assert len(items) == 3
    for it in items:
        assert len(R.sentences(it.candidate)) == PARAGRAPH_SENTENCES
        assert len(it.references) == 3
        assert all(len(R.sentences(r)) == PARAGRAPH_SENTENCES for r in it.references)
        assert not set(R.sentences(it.candidate)) & {s for r in it.references for s in R.sentences(r)}
    assert [it.key for it in benchmark_items("coco-paragraph", n=3, seed=7)] == [it.key for it in items]
    again = benchmark_items("coco-paragraph", n=3, seed=8)
    assert any(a.candidate != b.candidate for a, b in zip(items, again))  # the seed picks the captions
    assert len(benchmark_items("coco-paragraph")) == 500
    assert np.mean([len(it.candidate.split()) for it in items]) > 80


def test_caption_runs_keep_their_rule_digest_and_paragraph_runs_hash_the_paragraph_rules():
    from capeval.stress.perturbations import rule_digest

    assert rule_digest(["object_swap"]) == rule_digest(["negation", "article"]) == rule_digest()
    assert rule_digest(["object_swap", "tail_cut"]) != rule_digest(["object_swap"])
