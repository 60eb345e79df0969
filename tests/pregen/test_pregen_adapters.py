import numpy as np
import pytest

torch = pytest.importorskip("torch")

from capeval.errors import InputError  # noqa: E402
from capeval.pregen import tiers  # noqa: E402
from capeval.pregen.adapters import (  # noqa: E402
    NextTokenAdapter,
    TorchModuleAdapter,
    score_references,
    target_prob_and_rank,
)
from benchmarks.demo_captioners.models import Captioner, scaled_hyperparams  # noqa: E402

V = 23


def _model(arch="merge", seed=0):
    torch.manual_seed(seed)
    m = Captioner(arch, V, 6, scaled_hyperparams(arch, 16))
    # wider weights than the clipped init, so distributions are far from uniform
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.7)
    return m.eval()


def _data(seed=1, n_images=7):
    g = torch.Generator().manual_seed(seed)
    images = list(torch.rand(n_images, 6, generator=g))
    refs = [
        [torch.randint(1, V, (int(torch.randint(0, 9, (1,), generator=g)),), generator=g).tolist()
         for _ in range(int(torch.randint(1, 5, (1,), generator=g)))]
        for _ in range(n_images)
    ]
    return images, refs


def _naive(model, images, refs):
    """One caption at a time: softmax, then the position in numpy's argsort of -p."""
    probs, ranks = [], []
    for img, group in zip(images, refs):
        for cap in group:
            inp = torch.tensor([[0] + cap])
            with torch.no_grad():
                dist = torch.softmax(model(img[None], inp)[0].double(), -1).numpy()
            for t, target in enumerate(cap + [0]):
                probs.append(float(dist[t, target]))
                ranks.append(np.argsort(-dist[t]).tolist().index(target))
    return np.array(probs), np.array(ranks)


def _greedy(model, img, max_len=6):
    cap = []
    while len(cap) < max_len:
        with torch.no_grad():
            nxt = int(model(img[None], torch.tensor([[0] + cap]))[0, -1].argmax())
        if nxt == 0:
            break
        cap.append(nxt)
    return cap


@pytest.mark.parametrize("arch", ["init", "pre", "par", "merge"])
def test_batched_scores_equal_one_caption_at_a_time(arch):
    model = _model(arch)
    images, refs = _data()
    refs[0].append(_greedy(model, images[0]))  # guarantees rank-0 positions
    ts = score_references(TorchModuleAdapter(model, V, 0), images, refs, end_id=0)
    p, r = _naive(model, images, refs)
    assert ts.caption_lengths.tolist() == [len(c) + 1 for g in refs for c in g]
    assert ts.captions_per_image.tolist() == [len(g) for g in refs]
    assert ts.ranks.tolist() == r.tolist()
    # float32 logits of a padded batch differ from a one-caption pass in the last bits
    np.testing.assert_allclose(ts.probs, p, rtol=1e-5)
    assert (ts.ranks == 0).any() and (ts.ranks > 0).any()


def test_memory_bound_and_vocab_chunks_do_not_change_results():
    model = _model()
    images, refs = _data(seed=5)
    ad = TorchModuleAdapter(model, V, 0)
    big = score_references(ad, images, refs, end_id=0)
    small = score_references(ad, images, refs, end_id=0, max_logits=1, vocab_chunk=4)
    assert small.ranks.tolist() == big.ranks.tolist()
    np.testing.assert_allclose(small.probs, big.probs, rtol=1e-6)
    assert tiers.compute(small, [tiers.BEST]) == tiers.compute(big, [tiers.BEST])


def test_rank_counts_strictly_greater_logits():
    logits = torch.tensor([[1.0, 3.0, 3.0, 0.0], [1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 1.0, 5.0]])
    targets = torch.tensor([1, 0, 1])
    p, r = target_prob_and_rank(logits, targets, vocab_chunk=3)
    assert r.tolist() == [0, 2, 1]  # a target tied for the maximum has rank 0
    expect = torch.softmax(logits.double(), 1)[torch.arange(3), targets]
    np.testing.assert_allclose(p.numpy(), expect.numpy(), rtol=1e-6)


def test_errors_name_the_caption():
    model = _model()
    ad = TorchModuleAdapter(model, V, 0)
    assert isinstance(ad, NextTokenAdapter)
    with pytest.raises(InputError, match="image 1 caption 0: token id 99"):
        score_references(ad, [torch.zeros(6)] * 2, [[[2]], [[99]]], end_id=0)
    with pytest.raises(InputError, match="image 0 has no reference captions"):
        score_references(ad, [torch.zeros(6)], [[]], end_id=0)
    with pytest.raises(InputError, match="2 conditionings but 1"):
        score_references(ad, [torch.zeros(6)] * 2, [[[2]]], end_id=0)


def test_training_mode_is_restored_and_dropout_off():
    model = _model("par")
    model.train()
    images, refs = _data()
    a = score_references(TorchModuleAdapter(model, V, 0), images, refs, end_id=0)
    b = score_references(TorchModuleAdapter(model, V, 0), images, refs, end_id=0)
    assert model.training
    assert a.ranks.tolist() == b.ranks.tolist() and np.array_equal(a.probs, b.probs)


# -- Hugging Face adapters on tiny random models built from configs (no download) -------


def _hf_naive(model, inputs_list, targets_list, encdec=False, start=None):
    probs, ranks = [], []
    for inp, tgt in zip(inputs_list, targets_list):
        with torch.no_grad():
            if encdec:
                out = model(input_ids=torch.tensor([inp]), decoder_input_ids=torch.tensor([[start] + tgt[:-1]])).logits[0]
                rows = out
            else:
                full = inp + tgt
                out = model(input_ids=torch.tensor([full[:-1]])).logits[0]
                rows = out[len(inp) - 1 :]
        for t, target in enumerate(tgt):
            row = rows[t]
            probs.append(float(torch.softmax(row.double(), -1)[target]))
            ranks.append(int((row > row[target]).sum()))
    return np.array(probs), np.array(ranks)


@pytest.mark.slow
def test_hf_causal_lm_adapter():
    transformers = pytest.importorskip("transformers")
    from capeval.pregen.adapters import HFCausalLMAdapter

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=40, n_positions=32, n_embd=16, n_layer=1, n_head=2)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    prompts = [[1, 2, 3], [4]]
    refs = [[[5, 6, 7], [8]], [[9, 10, 11, 12]]]
    ts = score_references(HFCausalLMAdapter(model), prompts, refs, end_id=39)
    p, r = _hf_naive(model, [prompts[0], prompts[0], prompts[1]], [c + [39] for g in refs for c in g])
    assert ts.ranks.tolist() == r.tolist()
    np.testing.assert_allclose(ts.probs, p, rtol=1e-5)


@pytest.mark.slow
def test_hf_encoder_decoder_adapter():
    transformers = pytest.importorskip("transformers")
    from capeval.pregen.adapters import HFEncoderDecoderAdapter

    torch.manual_seed(0)
    cfg = transformers.T5Config(vocab_size=40, d_model=16, d_kv=8, d_ff=32, num_layers=1,
                                num_heads=2, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    model = transformers.T5ForConditionalGeneration(cfg).eval()
    cond = [{"input_ids": [5, 6, 7, 1]}, {"input_ids": [8, 1]}]
    refs = [[[10, 11], [12, 13, 14]], [[15]]]
    ts = score_references(HFEncoderDecoderAdapter(model), cond, refs, end_id=1)
    p, r = _hf_naive(model, [c["input_ids"] for c in (cond[0], cond[0], cond[1])],
                     [c + [1] for g in refs for c in g], encdec=True, start=0)
    assert ts.ranks.tolist() == r.tolist()
    np.testing.assert_allclose(ts.probs, p, rtol=1e-5)
