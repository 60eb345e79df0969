"""Fine-tuned bi-encoder metric on a tiny random BERT and a word-level vocabulary built here
(no download): batches, scoring, and that training learns a trivial signal."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from capeval.errors import InputError  # noqa: E402
from capeval.learn import encoder_finetune as ef  # noqa: E402
from capeval.learn.judgments import Judgments  # noqa: E402

WORDS = [f"w{i}" for i in range(30)] + ["good", "bad"]


@pytest.fixture(scope="module")
def tiny():
    tokenizers = pytest.importorskip("tokenizers")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS]
    tk = tokenizers.Tokenizer(tokenizers.models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tk.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    tk.post_processor = tokenizers.processors.TemplateProcessing(single="[CLS] $A [SEP]",
                                                                 special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="[PAD]", unk_token="[UNK]")
    assert tok(["w1 good"])["input_ids"] == [[2, 5, WORDS.index("good") + 4, 3]]
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=64, max_position_embeddings=64)
    return tok, transformers.BertModel(cfg).eval()


def _units(n_images: int, seed: int):
    """Per image: 5 random-word references, 4 candidates; those with "good" are rated 4, "bad" 1."""
    rng = np.random.default_rng(seed)
    cands, refs, images, ratings = [], [], [], []
    for i in range(n_images):
        rs = [" ".join(rng.choice(WORDS[:30], size=4)) for _ in range(5)]
        for k in range(4):
            word = "good" if k % 2 == 0 else "bad"
            words = list(rng.choice(WORDS[:30], size=3))
            words.insert(int(rng.integers(4)), word)
            cands.append(" ".join(words))
            refs.append(rs)
            images.append(f"img{seed}-{i}")
            ratings.append(4.0 if word == "good" else 1.0)
    return cands, refs, images, np.array(ratings)


def _rating_judgments(n_images=40, seed=0):
    c, r, img, y = _units(n_images, seed)
    return Judgments("toy-rating", "rating", c, r, img, ratings=y)


def _preference_judgments(n_pairs=30, seed=1):
    c, r, img, y = _units(n_pairs // 2 + 1, seed)
    pairs = np.array([(2 * k, 2 * k + 1) if k % 2 == 0 else (2 * k + 1, 2 * k) for k in range(n_pairs)])
    labels = np.array([0.0 if y[a] > y[b] else 1.0 for a, b in pairs])
    return Judgments("toy-pref", "preference", c, r, img, pairs=pairs, labels=labels)


def _good_over_bad(scores, ratings):
    good, bad = scores[ratings > 2], scores[ratings < 2]
    return float((good[:, None] > bad[None, :]).mean())


def test_score_is_the_centroid_cosine_and_averages_reference_groups(tiny):
    tok, model = tiny
    cands = ["w1 w2 good", "w3 bad"]
    refs = [["w1 w2", "w4 w5 w6"], [f"w{i}" for i in range(12)]]  # 12 refs -> groups of 4,4,4 with max_refs=5
    s = ef.score(tok, model, cands, refs, max_refs=5)
    E = ef.embed(tok, model, [*cands, *refs[0], *refs[1]])
    c0, c1 = E[0], E[1]
    R0, R1 = E[2:4], E[4:]
    cen = R0.mean(0)
    assert s[0] == pytest.approx(c0 @ cen / np.linalg.norm(cen), abs=1e-6)
    groups = [R1[0:4], R1[4:8], R1[8:12]]
    want = np.mean([c1 @ g.mean(0) / np.linalg.norm(g.mean(0)) for g in groups])
    assert s[1] == pytest.approx(want, abs=1e-6)
    whole = c1 @ R1.mean(0) / np.linalg.norm(R1.mean(0))
    assert ef.score(tok, model, cands[1:], refs[1:], max_refs=12)[0] == pytest.approx(whole, abs=1e-6)


def test_batches_take_turns_and_compare_only_differing_ratings():
    cfg = ef.FinetuneConfig(steps=6, batch_units=8, units_per_image=4, seed=3)
    rj, pj = _rating_judgments(), _preference_judgments()
    plan = ef.batches([rj, pj], cfg)
    assert [b.benchmark for b in plan] == ["toy-rating", "toy-pref"] * 3
    for b in plan:
        assert len(b.candidates) == len(b.references) == 8
        assert all(len(r) == cfg.train_refs for r in b.references)
        assert b.ia.size == b.ib.size == b.target.size > 0
    rb = plan[0]
    y = {c: r for c, r in zip(rj.candidates, rj.ratings)}
    for a, b, t in zip(rb.ia, rb.ib, rb.target):
        assert y[rb.candidates[a]] != y[rb.candidates[b]]
        assert t == float(y[rb.candidates[a]] > y[rb.candidates[b]])
    assert ef.batches([rj], cfg)[0].candidates == ef.batches([rj], cfg)[0].candidates  # seeded


def test_training_learns_a_trivial_signal_and_leaves_the_base_model_alone(tiny):
    tok, model = tiny
    before_params = [p.detach().clone() for p in model.parameters()]
    test = _rating_judgments(n_images=30, seed=7)
    s0 = ef.score(tok, model, test.candidates, test.references)
    cfg = ef.FinetuneConfig(steps=80, batch_units=16, units_per_image=4, lr=1e-3, seed=0)
    res = ef.train(tok, model, [_rating_judgments(), _preference_judgments()], cfg)
    s1 = ef.score(tok, res.model, test.candidates, test.references)
    acc0, acc1 = _good_over_bad(s0, test.ratings), _good_over_bad(s1, test.ratings)
    assert acc1 > 0.9 and acc1 > acc0 + 0.2, (acc0, acc1)
    info = res.info()
    assert info["steps_per_benchmark"] == {"toy-rating": 40, "toy-pref": 40}
    assert info["loss_last_fifth"] < info["loss_first_fifth"]
    assert all(torch.equal(a, b) for a, b in zip(before_params, model.parameters()))
    assert not res.model.training


def test_bad_input_is_named():
    with pytest.raises(InputError, match="train_refs"):
        ef.FinetuneConfig(train_refs=6, max_refs=5)
    with pytest.raises(InputError, match="batch_units"):
        ef.FinetuneConfig(batch_units=1)
    with pytest.raises(InputError, match="lr"):
        ef.FinetuneConfig(lr=0.0)
    flat = _rating_judgments()
    flat.ratings = np.ones(len(flat))
    with pytest.raises(InputError, match="same rating"):
        ef.batches([flat], ef.FinetuneConfig(steps=2))
    with pytest.raises(InputError, match="no training"):
        ef.batches([], ef.FinetuneConfig(steps=2))
    with pytest.raises(InputError, match="no references"):
        ef.score(None, None, ["a"], [[]])
