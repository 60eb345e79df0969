"""Neural QACE backends on tiny random T5 models and a word-level tokenizer built here."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from capeval.qace.hf import (QA_TEMPLATE, QG_TEMPLATE, HFQuestionAnswerer, HFQuestionGenerator, ImageQA,  # noqa: E402
                             VisualT5Answerer, answerability_from_logits, unanswerable_id)
from capeval.qace.pipeline import QacePipeline  # noqa: E402
from capeval.qace.types import Question  # noqa: E402
from tests._needs import QACE_REF  # noqa: E402

WORDS = ("<pad> </s> <unk> answer: context: question: visual unanswerable a the dog man black ball "
         "catches riding horse what is who two men horses on beach ? . visual").split()


def _tokenizer():
    vocab = {w: i for i, w in enumerate(dict.fromkeys(WORDS))}
    tk = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="</s>",
                                               unk_token="<unk>")
    return tok


def _model(vocab: int, seed: int = 0):
    torch.manual_seed(seed)
    cfg = transformers.T5Config(vocab_size=vocab, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2,
                                decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    return transformers.T5ForConditionalGeneration(cfg).eval()


def _greedy(model, input_ids, max_length):
    """Reference greedy decoding, one sequence, token by token."""
    dec = [0]
    first = None
    with torch.no_grad():
        for _ in range(max_length - 1):
            logits = model(input_ids=torch.tensor([input_ids]), decoder_input_ids=torch.tensor([dec])).logits[0, -1]
            if first is None:
                first = logits.double()
            nxt = int(logits.argmax())
            dec.append(nxt)
            if nxt == 1:
                break
    return dec, first


def test_answerability_maths():
    logits = np.array([[0.0, 0.0, np.log(2.0)], [1000.0, 0.0, 0.0]])
    np.testing.assert_allclose(answerability_from_logits(logits, 2), [0.5, 1.0])


def test_prompts_follow_the_notebook():
    assert QG_TEMPLATE.format(answer="dog", context="a dog") == "answer: dog  context: a dog </s>"
    assert QA_TEMPLATE.format(question="what?", context="x y") == "question: what?  context: x y </s>"


def test_qa_batching_decoding_and_answerability_match_a_naive_loop():
    tok = _tokenizer()
    model = _model(len(tok))
    unans = unanswerable_id(tok)
    assert tok.convert_ids_to_tokens(unans) == "unanswerable"
    qs = [Question("what is the man riding ?", "horse", "entity", "a horse"),
          Question("who catches the ball ?", "dog", "entity", "a dog"),
          Question("what ?", "ball", "entity", "a ball")]
    ctxs = [("a man riding a horse .",), ("the dog catches a ball .", "a black dog ."), ("two men .",)]
    items = list(zip(qs, ctxs))
    got1 = HFQuestionAnswerer(model, tok, batch_size=1, max_length=8, stopwords="none").answer(items)
    got3 = HFQuestionAnswerer(model, tok, batch_size=3, max_length=8, stopwords="none").answer(items)
    for (q, c), a1, a3 in zip(items, got1, got3):
        prompt = QA_TEMPLATE.format(question=q.text, context=" ".join(c))
        ids = tok(prompt)["input_ids"]
        dec, first = _greedy(model, ids, 8)
        want = 1.0 - float(torch.softmax(first, -1)[unans])
        assert a1.answerability == pytest.approx(want, rel=1e-5)
        assert a3.answerability == pytest.approx(want, rel=1e-4)  # padding in the batch
        text = tok.decode(dec, skip_special_tokens=True).strip().lower()
        assert a1.text == ("" if text == "unanswerable" else text)
        assert a3.text == a1.text


def test_qg_builds_one_prompt_per_chunk_and_strips_the_prefix(monkeypatch):
    tok = _tokenizer()
    model = _model(len(tok), seed=1)
    qg = HFQuestionGenerator(model, tok, batch_size=2, max_length=6, stopwords="nltk-153")
    seen = []
    real = qg._gen.generate

    def spy(prompts):
        seen.extend(prompts)
        texts, logits = real(prompts)
        return ["question: " + t for t in texts], logits

    monkeypatch.setattr(qg._gen, "generate", spy)
    answers = [[("man", "a man"), ("horse", "a horse")], [("dog", "the dog")]]
    out = qg.generate(["a man riding a horse", "the dog"], answers=answers)
    assert seen == ["answer: man  context: a man riding a horse </s>",
                    "answer: horse  context: a man riding a horse </s>", "answer: dog  context: the dog </s>"]
    assert all(not q.text.startswith("question:") for qs in out for q in qs)
    assert [q.answer for q in out[1]] == ["dog"]
    # identical generated questions are kept once (first occurrence)
    assert len(out[0]) == len({q.text for q in out[0]})


def test_visual_t5_inputs_and_pipeline():
    tok = _tokenizer()
    model = _model(len(tok), seed=2)
    torch.manual_seed(3)
    proj = torch.nn.Linear(10, 16)
    vqa = VisualT5Answerer(model, tok, proj, text_len=6, prefix_ids=(3, 4), unanswerable_id=7, max_length=5,
                           stopwords="none")
    regions = {"img1": np.random.default_rng(0).normal(size=(4, 10)).astype(np.float32)}
    emb, mask = vqa.encoder_inputs(["who ?"], [regions["img1"]])
    assert emb.shape == (1, 6 + 2 + 4, 16)
    n_tok = len(tok("visual answer: who ?", add_special_tokens=False)["input_ids"])
    assert mask[0].tolist() == [1] * n_tok + [0] * (6 - n_tok) + [1] * 6
    # the region rows are proj(features)
    torch.testing.assert_close(emb[0, 8:], proj(torch.as_tensor(regions["img1"])))
    a = vqa.answer(["who ?"], [regions["img1"]])[0]
    with torch.no_grad():
        first = model(inputs_embeds=emb, attention_mask=mask, decoder_input_ids=torch.tensor([[0]])).logits[0, -1]
    assert a.answerability == pytest.approx(1.0 - float(torch.softmax(first.double(), -1)[7]), rel=1e-5)

    class QG:
        def generate(self, cands):
            return [[Question("who ?", "man", "entity", "a man")] for _ in cands]

    out = QacePipeline(QG(), ImageQA(vqa, regions), lambda pairs: np.zeros(len(pairs))).run(["a man"], [["img1"]])
    assert out.explanations[0].rows[0].answerability == [pytest.approx(a.answerability)]
    with pytest.raises(Exception, match="no region features"):
        QacePipeline(QG(), ImageQA(vqa, regions), lambda p: np.zeros(len(p))).run(["a man"], [["img2"]])


@pytest.mark.needs(*QACE_REF, "extra:image")
def test_qace_img_metric_through_capeval_score():
    import capeval
    from capeval.errors import InputError, ResourceNotFound

    tok = _tokenizer()
    model = _model(len(tok), seed=4)
    torch.manual_seed(5)
    vqa = VisualT5Answerer(model, tok, torch.nn.Linear(10, 16), text_len=6, prefix_ids=(3, 4),
                           unanswerable_id=7, max_length=5, name="tiny-visual-t5")
    images = {"img1": np.ones((4, 10), dtype=np.float32), "img2": np.zeros((4, 10), dtype=np.float32)}
    r = capeval.score(["A man is riding a horse.", "A black dog."], [["img1"], ["img2"]], ["qace_img", "qace_img_answerability"],
                      options={"qace_img": {"reader": vqa, "images": images}})
    exp = r.explanations["qace_img"]
    assert len(exp) == 2 and exp[0].rows and exp[0].contexts == ["img1"]
    for e, ans in zip(exp, r.per_caption["qace_img_answerability"]):
        assert ans == pytest.approx(np.mean([row.answerability[0] for row in e.rows]))
        assert 0.0 <= ans <= 1.0
    assert "vqa:tiny-visual-t5" in r.signatures["qace_img"] and "prompt:'visual answer: '" in r.signatures["qace_img"]
    with pytest.raises(ResourceNotFound, match="Visual-T5"):
        capeval.score(["a dog"], [["img1"]], ["qace_img"])
    with pytest.raises(InputError, match="exactly one image id"):
        capeval.score(["a dog"], [["img1", "img2"]], ["qace_img"], options={"qace_img": {"reader": vqa, "images": images}})


@pytest.mark.needs(*QACE_REF)
def test_qace_ref_hf_variant_loads_models_from_a_local_path(tmp_path):
    import capeval
    from capeval.errors import ResourceNotFound

    tok = _tokenizer()
    model = _model(len(tok), seed=6)
    model.save_pretrained(tmp_path / "t5")
    tok.save_pretrained(tmp_path / "t5")
    path = str(tmp_path / "t5")
    r = capeval.score(["A man is riding a horse.", "A dog."], [["a man riding a horse", "a man"], ["the dog"]],
                      ["qace_ref", "qace_ref_answerability"], options={"qace_ref": {"qg": path, "qa": path}})
    sig = r.signatures["qace_ref"]
    assert sig.startswith("qace_ref_hf|") and f"qg:{path}" in sig and f"qa:{path}" in sig
    exp = r.explanations["qace_ref"][0]
    assert [row.candidate_answer for row in exp.rows][:1] == ["man"]  # noun chunks, stop words removed
    assert len(exp.rows[0].answers) == 2  # one answer per reference (per-reference reduction)
    ans = np.mean([np.mean(row.answerability) for row in exp.rows])
    assert r.per_caption["qace_ref_answerability"][0] == pytest.approx(ans)
    with pytest.raises(ResourceNotFound, match="cannot load"):
        capeval.score(["a dog"], [["a dog"]], ["qace_ref"],
                      options={"qace_ref": {"qg": str(tmp_path / "missing"), "qa": str(tmp_path / "missing")}})
