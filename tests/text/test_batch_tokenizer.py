"""The ``ptb-batch`` tokenizer: pycocoevalcap's view of one batch, where a caption's last token
can depend on the next caption (docs/TOKENIZER.md, "Context across lines")."""
from __future__ import annotations

import pytest

import capeval
from capeval.errors import InputError
from capeval.text import ptb, tokenize_corpus, tokenizer_id

CANDS = ["It is a b.", "x"]
REFS = [["It is a b.", "A dog"], ["It is a b."]]


def test_batch_context_changes_only_the_caption_before_a_sentence_start():
    # Before "A dog" the jar reads "b." as the end of a sentence; alone (or last) it keeps "b.".
    cands, refs = tokenize_corpus(CANDS, REFS, "ptb-batch")
    assert refs == [["it is a b", "a dog"], ["it is a b."]]
    assert cands == ["it is a b.", "x"]
    plain_cands, plain_refs = tokenize_corpus(CANDS, REFS, "ptb")
    assert plain_refs == [["it is a b.", "a dog"], ["it is a b."]]
    assert plain_cands == cands


def test_candidates_and_references_are_two_batches_in_input_order():
    cands, refs = tokenize_corpus(CANDS, REFS, "ptb-batch")
    assert cands == ptb.tokenize_lines(CANDS)
    assert [t for r in refs for t in r] == ptb.tokenize_lines([t for r in REFS for t in r])


def test_score_stamps_the_batch_tokenizer_and_streaming_refuses_it(tmp_path):
    res = capeval.score(CANDS, REFS, ["bleu1"], tokenizer="ptb-batch")
    assert f"tok:{tokenizer_id('ptb-batch')}" in res.signatures["bleu1"]
    assert tokenizer_id("ptb-batch") != tokenizer_id("ptb")
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": 1, "candidate": "a dog", "references": ["a dog runs"]}\n')
    with pytest.raises(InputError, match="ptb-batch"):
        capeval.score_stream(rows, ["bleu1"], output=tmp_path / "out.jsonl", tokenizer="ptb-batch")


def test_the_pycocoevalcap_drop_in_tokenizes_one_batch():
    from capeval.compat.pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    out = PTBTokenizer().tokenize({1: [{"caption": "It is a b."}, {"caption": "A dog"}], 2: [{"caption": "It is a b."}]})
    assert out == {1: ["it is a b", "a dog"], 2: ["it is a b."]}


def test_a_line_of_u001c_is_no_blank_line_to_the_next_caption():
    # The jar (checked): U+001C is a character of the line, so "x." keeps its period before a
    # line holding only U+001C, but loses it before a blank line and a sentence word.
    lines = ["a x.", "\x1c", "The dog", "b y.", " ", "The cat"]
    assert ptb.tokenize_lines(lines) == ["a x.", "", "the dog", "b y", "", "the cat"]
