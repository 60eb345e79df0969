"""The optional compiled core (capeval._speedups) against the numpy/Python code it replaces:
both paths run and must agree with ``==`` — the n-gram index (up to the numbering of n-gram
ids, which nothing reads), BLEU statistics, ROUGE-L and CIDEr(-D) per caption and corpus, the
fixed-df reward, the PTB fast path, and the ASCII-compiled lexer rules. The numpy/Python path
itself is checked against pycocoevalcap by test_ngram_oracles.py and the tokenizer tests.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests._budget import examples

import capeval
from capeval import _compiled
from capeval.metrics import _ngrams
from capeval.metrics.cider import DocumentFrequency
from capeval.text import _ptb_lexer, ptb

from ..text.test_ptb import caption_like

CORE = _compiled.core
needs_core = pytest.mark.skipif(CORE is None, reason="capeval._speedups not built (no C compiler at install)")
pytestmark = needs_core

METRICS = ["bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d", "cider"]


def _with(core, fn, *args, **kw):
    """fn(*args) with the compiled core switched on (core) or off (None), caches cleared."""
    saved = _compiled.core
    _compiled.core = core
    _ngrams.clear_cache()
    try:
        return fn(*args, **kw)
    finally:
        _compiled.core = saved
        _ngrams.clear_cache()


def _canonical(ix: _ngrams.NgramIndex):
    # n-gram ids are exact but numbered differently by the two builds: compare them as strings
    return (ix.vocab, ix.words.tolist(), ix.n_words.tolist(), ix.w_start.tolist(), ix.e_start.tolist(),
            ix.gram_strings(ix.e_gram), ix.e_order.tolist(), ix.e_count.tolist(), ix.g_off.tolist(), ix.n_grams,
            ix.space_clean, sorted(ix.gram_strings(np.arange(ix.n_grams))))


def _assert_same_scores(cands, refs, tokenizer="none", metrics=METRICS, **kw):
    a = _with(CORE, capeval.score, cands, refs, metrics, tokenizer=tokenizer, allow_empty=True, **kw)
    b = _with(None, capeval.score, cands, refs, metrics, tokenizer=tokenizer, allow_empty=True, **kw)
    for m in metrics:
        assert a.corpus[m] == b.corpus[m], m
        assert a.per_caption[m].tolist() == b.per_caption[m].tolist(), m


WORD = st.sampled_from(["a", "dog", "cat", "runs", "on", "the", "grass", "red", "ball", "is", "two", "é", "x-y"])
SENT = st.lists(WORD, min_size=0, max_size=14).map(" ".join)
# Sentences whose split() differs from split(" "): several spaces, tabs, other Unicode spaces.
ODD = st.lists(st.one_of(WORD, st.sampled_from(["  ", "\t", "\u3000", " \u00a0 ", "\x1c"])), max_size=10).map(" ".join)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.one_of(SENT, ODD), max_size=12, unique=True))
def test_index_equals_numpy_build(sentences):
    a = _with(CORE, _ngrams.NgramIndex, sentences)
    b = _with(None, _ngrams.NgramIndex, sentences)
    assert _canonical(a) == _canonical(b)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.text(max_size=30), max_size=10, unique=True))
def test_index_equals_numpy_build_on_any_text(sentences):
    # any code points: 1-, 2- and 4-byte strings, equal words across them, every kind of space
    a = _with(CORE, _ngrams.NgramIndex, sentences)
    b = _with(None, _ngrams.NgramIndex, sentences)
    assert _canonical(a) == _canonical(b)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.tuples(st.one_of(SENT, ODD), st.lists(st.one_of(SENT.filter(bool), ODD.filter(str.strip)),
                                                          min_size=1, max_size=5)),
                min_size=2, max_size=8))
def test_scores_equal_numpy_path(units):
    _assert_same_scores([u[0] for u in units], [u[1] for u in units])


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.lists(st.integers(0, 6), max_size=200), min_size=2, max_size=6))
def test_lcs_pairs_equal_the_table(seqs):
    # both branches: one 64-bit word (reference <= 64 words) and several, the carry crossing words
    from capeval.metrics.rouge import lcs_length

    words = np.array([w for q in seqs for w in q], dtype=np.int32)
    w_start = np.array([0, *np.cumsum([len(q) for q in seqs])], dtype=np.int64)
    pairs = [(a, b) for a in range(len(seqs)) for b in range(len(seqs))]
    c_sid = np.array([a for a, _ in pairs], dtype=np.int64)
    r_sid = np.array([b for _, b in pairs], dtype=np.int64)
    got = np.frombuffer(CORE.lcs_pairs(words, w_start, 7, c_sid, r_sid), dtype=np.int64).tolist()
    assert got == [lcs_length(list(map(str, seqs[a])), list(map(str, seqs[b]))) for a, b in pairs]


def test_long_references_and_repeats():
    # references over 64 words (ROUGE-L's other path), a word repeated many times (counts > the
    # compiled squares cache), units sharing reference sets
    long = " ".join(["a", "b", "a", "c"] * 30)
    cands = ["a a a a a a a a a a a a a a a a a a a", long, "a b c", "c b a"]
    refs = [[long, "a a a"], ["a b"], [long, "c b a", "a"], [long, "a a a"]]
    _assert_same_scores(cands, refs)


def test_fixed_df_and_reward_equal_numpy_path():
    train = [["a dog runs on the grass", "a red ball"], ["two cats", "a cat is on the grass"], ["the dog"]]
    df = DocumentFrequency.from_references(train, [1, 2, 1])
    cands = ["a dog on the grass", "two red cats", "nothing matches here", ""]
    refs = [["a dog runs"], ["two cats", "a red ball"], ["the grass is red"], ["a dog"]]
    _assert_same_scores(cands, refs, metrics=["cider_d", "cider"],
                        options={"cider_d": {"df": df}, "cider": {"df": df}})
    reward = capeval.CiderDReward(df)
    assert _with(CORE, reward, cands, refs).tolist() == _with(None, reward, cands, refs).tolist()


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("name", ["flickr8k-expert", "composite", "pascal50s", "tanti-coco"])
def test_shared_data_equal_numpy_path(name, data_dir):
    from capeval import data

    t = data.load(name, root=data_dir)
    if hasattr(t, "candidates_a"):
        cands, refs = list(t.candidates_a) + list(t.candidates_b), list(t.references) * 2
    elif getattr(t, "systems", None):
        cands = [c for s in sorted(t.systems) for c in t.systems[s]]
        refs = list(t.references) * len(t.systems)
    else:
        cands, refs = t.candidates, t.references
    _assert_same_scores(list(cands), [list(r) for r in refs], tokenizer="ptb")


# --- tokenizer ---------------------------------------------------------------------------------
_EDGE = ["Mr. Smith", "a dog's.", "Dog's. ", "x-a. y", '"a."', "at 3 4 pm", "wannabe", "Cannot", "", " ",
         "  A  b  ", "etc.", "no.", "No.", "St.", "5.", "a. b.", "e.g. it", "ok .", "'s.", "a-", "-a", "a--b",
         "'s", "dog's's", '""', '"', "a\tb", "a\nb", "caf\u00e9", "x'sy", "a.\"", "a,\"", "a.b", "A-B-C's,\""]


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.one_of(caption_like, st.sampled_from(_EDGE)), max_size=30))
def test_ptb_fast_equals_python(texts):
    assert CORE.ptb_fast(texts, ptb._ABBREVIATIONS) == [ptb._fast(t) for t in texts]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.one_of(st.text(max_size=20), st.text(alphabet="ab1 .,'\"-s", max_size=20)), max_size=20))
@example(["0-.", "a dog runs-.", "a-b-."])  # Python 3.11.2's possessive-quantifier bug (docs/TOKENIZER.md)
def test_ptb_fast_equals_python_on_any_text(texts):
    assert CORE.ptb_fast(texts, ptb._ABBREVIATIONS) == [ptb._fast(t) for t in texts]


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(caption_like, st.sampled_from(_EDGE)))
def test_ascii_rules_lex_like_the_full_rules(text):
    if not text.isascii():
        text = text.encode("ascii", "ignore").decode()
    assert _ptb_lexer.lex(text) == _ptb_lexer.lex(text, ascii_rules=False)


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(caption_like, st.sampled_from(_EDGE + ["Cannot go", "gonna", "a b", "x", "Mr Smith", "wannabe x"])))
def test_letter_run_shortcut_lexes_like_the_rules(text):
    assert _ptb_lexer.lex(text) == _ptb_lexer.lex(text, letter_runs=False)


@pytest.mark.data
def test_ptb_fast_and_ascii_rules_on_all_shared_captions(shared_texts):
    texts_l = shared_texts
    fast = CORE.ptb_fast(texts_l, ptb._ABBREVIATIONS)
    assert fast == [ptb._fast(t) for t in texts_l]
    slow_ascii = [t for t, f in zip(texts_l, fast) if f is None and t.isascii()]
    assert len(slow_ascii) > 100
    assert [_ptb_lexer.lex(t) for t in slow_ascii] == [_ptb_lexer.lex(t, ascii_rules=False) for t in slow_ascii]
    slow = [t for t, f in zip(texts_l, fast) if f is None]
    assert [_ptb_lexer.lex(t) for t in slow] == [_ptb_lexer.lex(t, letter_runs=False) for t in slow]


def test_bad_arguments_raise_named_errors():
    with pytest.raises(TypeError, match="sentence 1"):
        CORE.build_index(["a", 3])
    with pytest.raises(TypeError, match="caption 0"):
        CORE.ptb_fast([None], ptb._ABBREVIATIONS)
    ix = _with(CORE, _ngrams.NgramIndex, ["a b", "b"])
    from capeval.metrics._ngrams import index_arrays

    with pytest.raises(IndexError, match="u_sid"):
        CORE.bleu_units(*index_arrays(ix), np.array([5], dtype=np.int64), np.zeros(1, dtype=np.int64),
                        np.zeros((1, 1), dtype=np.int64), 1)
