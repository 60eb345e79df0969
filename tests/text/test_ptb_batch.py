"""The batched fast path (all captions in a few passes over their joined text) gives exactly
the per-caption tokenizer's strings: on caption-like random lists, with line breaks mixed in,
and on every distinct caption of the shared data."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._budget import examples

from capeval.text import ptb

from .test_ptb import caption_like

# Shapes next to the batch's vetoes and joins: abbreviations and initials before ".", "'s.",
# digits across spaces, split words, quotes and spaces at the edges, empty captions.
_EDGE = ["Mr. Smith", "a dog's.", "Dog's. ", "x-a. y", '"a."', "at 3 4 pm", "wannabe", "Cannot",
         "", " ", "  A  b  ", "etc.", "no.", "No.", "St.", "5.", "a. b.", "e.g. it", "ok .", "'s."]


def _one_by_one(texts):
    return [ptb.tokenize_one(t) for t in texts]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.one_of(caption_like, st.sampled_from(_EDGE)), max_size=30))
def test_batch_equals_one_by_one(texts):
    assert ptb.tokenize(texts) == _one_by_one(texts)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.one_of(caption_like, st.sampled_from(_EDGE + ["a\nb.", "\n", "x.\n y", "Mr.\nA"])),
                max_size=20))
def test_captions_holding_newlines_keep_their_place(texts):
    assert ptb.tokenize(texts) == _one_by_one(texts)


@pytest.mark.data
def test_batch_equals_one_by_one_on_all_shared_captions(shared_texts):
    texts_l = shared_texts
    assert len(texts_l) > 50_000
    assert ptb.tokenize(texts_l) == _one_by_one(texts_l)
