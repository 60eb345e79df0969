"""QACE's T5 readers past their window (``long_text``, docs/LONG_CAPTIONS.md), on the tiny random
T5 and word-level tokenizer of ``test_hf`` with a 24-token window: ``truncate`` keeps today's
prompts and counts what it cut; ``sentences`` asks about the sentence holding the answer (question
generation) and reads a long context window by window (answering), so nothing is cut."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from capeval.errors import InputError  # noqa: E402
from capeval.qace.hf import (QA_TEMPLATE, HFQuestionAnswerer, HFQuestionGenerator,  # noqa: E402
                             sentence_with, split_sentences)
from capeval.qace.pipeline import QacePipeline  # noqa: E402
from capeval.qace.types import Question  # noqa: E402
from tests._needs import QACE_REF  # noqa: E402

from .test_hf import _model, _tokenizer  # noqa: E402

WINDOW = 24
LONG = "a man riding a horse . " * 3 + "two men on the beach ."  # 23 words


def _tok():
    tok = _tokenizer()
    tok.model_max_length = WINDOW
    return tok


def _prompt_len(tok, q, ctx):
    return len(tok(QA_TEMPLATE.format(question=q, context=ctx))["input_ids"])


def test_truncate_counts_the_tokens_it_cuts_and_keeps_todays_answers():
    tok = _tok()
    model = _model(len(tok), seed=3)
    q = Question("who is riding ?", "man", "entity", "a man")
    items = [(q, ("a man .",)), (q, (LONG,)), (q, (LONG + " a dog .",))]
    qa = HFQuestionAnswerer(model, tok, batch_size=2, max_length=6, stopwords="none")
    got = qa.answer(items)
    assert qa.last_cut == [0, _prompt_len(tok, q.text, LONG) - WINDOW, _prompt_len(tok, q.text, LONG + " a dog .") - WINDOW]
    # the appended sentence lies past the window: never read
    assert got[2] == got[1]
    assert _prompt_len(tok, q.text, "a man .") < WINDOW


def test_sentences_read_the_whole_context(monkeypatch):
    tok = _tok()
    model = _model(len(tok), seed=3)
    q = Question("who is riding ?", "man", "entity", "a man")
    qa = HFQuestionAnswerer(model, tok, batch_size=2, max_length=6, stopwords="none", long_text="sentences")
    seen: list[str] = []
    real = qa._gen.generate

    def spy(prompts):
        seen.extend(prompts)
        return real(prompts)

    monkeypatch.setattr(qa._gen, "generate", spy)
    short = qa.answer([(q, ("a man .",))])
    assert seen == [QA_TEMPLATE.format(question=q.text, context="a man .")]  # a fitting prompt is unchanged
    assert short == HFQuestionAnswerer(model, tok, batch_size=2, max_length=6, stopwords="none").answer(
        [(q, ("a man .",))])
    seen.clear()
    qa.answer([(q, (LONG + " a dog .",))])
    assert qa.last_cut == [0]
    assert all(len(tok(p)["input_ids"]) <= WINDOW for p in seen) and len(seen) > 1
    # every sentence, the appended one included, is read in exactly one window
    read = " ".join(p.split("context: ", 1)[1].removesuffix(" </s>") for p in seen)
    assert read == LONG + " a dog ."


def test_question_generation_asks_about_the_sentence_with_the_answer(monkeypatch):
    tok = _tok()
    model = _model(len(tok), seed=1)
    text = LONG + " a dog catches the ball ."
    answers = [[("dog", "a dog")]]
    cut = HFQuestionGenerator(model, tok, max_length=6, stopwords="none")
    cut.generate([text], answers=answers)
    assert cut.last_cut[0][0] > 0
    qg = HFQuestionGenerator(model, tok, max_length=6, stopwords="none", long_text="sentences")
    seen: list[str] = []
    real = qg._gen.generate
    monkeypatch.setattr(qg._gen, "generate", lambda p: (seen.extend(p), real(p))[1])
    qg.generate([text], answers=answers)
    assert seen == ["answer: dog  context: a dog catches the ball . </s>"] and qg.last_cut == [[0]]
    assert sentence_with("A b. C d!", "C") == "C d!" and split_sentences("A b.  C") == ["A b.", "C"]


def test_the_pipeline_counts_cut_prompts_per_caption():
    tok = _tok()
    model = _model(len(tok), seed=3)

    class FixedQG:
        last_cut = [[0], [0, 0]]

        def generate(self, cands):
            return [[Question("who ?", "man", "entity", "a man")],
                    [Question("who ?", "man", "entity", "a man"), Question("what ?", "horse", "entity", "a horse")]]

    qa = HFQuestionAnswerer(model, tok, max_length=6, stopwords="none")
    out = QacePipeline(FixedQG(), qa, lambda pairs: np.zeros(len(pairs))).run(
        ["a man", "a man riding a horse"], [["a man ."], [LONG, "a man ."]])
    assert list(out.cut_texts) == [0, 2]  # caption 2: two questions against the long reference
    assert out.cut_tokens[1] == 2 * (_prompt_len(tok, "who ?", LONG) - WINDOW)


def test_an_unknown_mode_is_refused():
    with pytest.raises(InputError, match="long_text must be one of truncate, sentences"):
        HFQuestionAnswerer(_model(len(_tok())), _tok(), long_text="windows")


@pytest.mark.needs(*QACE_REF)
def test_qace_ref_family_warns_and_marks_the_signature(tmp_path):
    import capeval
    from capeval.metrics._long_text import LongTextWarning

    # The questions come from a random model (up to 31 tokens, whatever this CPU's float kernels
    # make of it), so the window leaves room for the longest question with any one sentence
    # (3 + 31 + 7 tokens) while the whole reference overflows it even with an empty question.
    tok = _tokenizer()
    tok.model_max_length = 48
    long_ref = "a man riding a horse . " * 8 + "two men on the beach ."  # 46 words
    _model(len(tok), seed=6).save_pretrained(tmp_path / "t5")
    tok.save_pretrained(tmp_path / "t5")
    path = str(tmp_path / "t5")
    assert _prompt_len(tok, "", long_ref) > 48 and _prompt_len(tok, "x " * 31, "two men on the beach .") <= 48
    for mode, marked in (("truncate", True), ("sentences", False)):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            r = capeval.score(["A man is riding a horse."], [[long_ref]], ["qace_ref"],
                              options={"qace_ref": {"qg": path, "qa": path, "long_text": mode}})
        said = [w for w in seen if issubclass(w.category, LongTextWarning)]
        assert bool(said) == marked and ("|trunc:" in r.signatures["qace_ref"]) == marked
        assert (r.details["qace_ref"]["long_text"]["cut_texts"] > 0) == marked
