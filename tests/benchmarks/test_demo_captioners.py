"""The demo where-image2 captioners of benchmarks/pregen_demo.py: shapes, beam search, training."""
import itertools
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from capeval.errors import InputError  # noqa: E402
from capeval.pregen import tiers  # noqa: E402
from capeval.pregen.adapters import TorchModuleAdapter, score_references  # noqa: E402
from benchmarks.demo_captioners.beam import beam_search  # noqa: E402
from benchmarks.demo_captioners.models import (  # noqa: E402
    ARCHITECTURES,
    PAPER_HYPERPARAMS,
    Captioner,
    scaled_hyperparams,
)
from benchmarks.demo_captioners.train import train  # noqa: E402
from benchmarks.demo_captioners.vocab import EDGE_INDEX, UNKNOWN_INDEX, Vocabulary  # noqa: E402


def _model(arch, V=9, seed=0, spread=1.5):
    torch.manual_seed(seed)
    m = Captioner(arch, V, 4, scaled_hyperparams(arch, 32))
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, spread)
    return m.eval()


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_incremental_steps_equal_teacher_forcing(arch):
    """Beam search's step-by-step state must give the same distributions as a full pass."""
    m = _model(arch)
    imgs = torch.rand(3, 4)
    seq = torch.tensor([[0, 3, 4, 5, 2], [0, 7, 7, 2, 8], [0, 2, 3, 4, 5]])
    with torch.no_grad():
        full = m(imgs, seq)
        img = m.image_vector(imgs)
        h = m.step(img, m.initial_state(img), seq[:, 0])
        for t in range(seq.shape[1]):
            torch.testing.assert_close(m.next_logits(img, h), full[:, t], rtol=1e-5, atol=1e-5)
            h = m.step(img, h, seq[:, t + 1]) if t + 1 < seq.shape[1] else h


def test_architecture_constraints_and_sizes():
    assert PAPER_HYPERPARAMS["par"].beam_width == 5
    hp = scaled_hyperparams("init", 4)
    assert (hp.embed_size, hp.rnn_size, hp.post_image_size, hp.batch_size) == (128, 128, 128, 128)
    m = Captioner("merge", 10, 4, scaled_hyperparams("merge", 4))
    assert m.out.in_features == 64 and m.init_state is not None
    assert Captioner("par", 10, 4, scaled_hyperparams("par", 4)).gru.input_size == 128
    with pytest.raises(InputError, match="rnn_size == post_image_size"):
        Captioner("init", 10, 4, scaled_hyperparams("init", 4).__class__(
            **{**scaled_hyperparams("init", 4).as_dict(), "rnn_size": 7}))
    # clipped normal: every weight inside the clip, most of them on it
    w = Captioner("pre", 50, 40, scaled_hyperparams("pre", 4)).out.weight
    clip = torch.tensor(0.1)
    assert bool(w.abs().max() <= clip) and float((w.abs() == clip).float().mean()) > 0.8


def _all_captions(V, max_words):
    words = [t for t in range(V) if t not in (EDGE_INDEX, UNKNOWN_INDEX)]
    for n in range(1, max_words + 1):
        yield from itertools.product(words, repeat=n)


def _log2_score(model, img, cap, end):
    inp = torch.tensor([[0, *cap]])
    with torch.no_grad():
        lp = torch.log_softmax(model(img[None], inp)[0].double(), -1) / math.log(2)
    tgt = list(cap) + ([0] if end else [])
    return float(sum(lp[t, x] for t, x in enumerate(tgt)))


@pytest.mark.parametrize("arch", ["init", "merge"])
def test_wide_beam_finds_the_exhaustive_optimum(arch):
    V, lower, upper = 5, 3, 4  # captions of 2..4 words over 3 usable words
    m = _model(arch, V=V, seed=3)
    imgs = torch.rand(4, 4)
    got = beam_search(m, imgs, beam_width=200, lower_bound=lower, upper_bound=upper)
    for i, cap in enumerate(got):
        best = max(
            (c for c in _all_captions(V, upper) if len(c) >= lower - 1),
            # a caption ends by the end token, or by reaching the upper bound (no end token)
            key=lambda c: _log2_score(m, imgs[i], c, end=len(c) < upper),
        )
        assert tuple(cap) == best


def test_beam_bounds_and_no_unknown():
    m = _model("par", V=9, seed=1)
    with torch.no_grad():
        m.out.bias[UNKNOWN_INDEX] = 50.0  # <UNK> would win everywhere if it were allowed
        m.out.bias[EDGE_INDEX] = 40.0  # and the end token right after
    caps = beam_search(m, torch.rand(6, 4), beam_width=3, lower_bound=5, upper_bound=7)
    assert all(4 <= len(c) <= 7 for c in caps)
    assert all(UNKNOWN_INDEX not in c and EDGE_INDEX not in c for c in caps)
    assert all(len(c) == 4 for c in caps)  # the end token is taken as soon as it is allowed


def test_beam_width_one_is_constrained_greedy():
    m = _model("pre", V=9, seed=2)
    imgs = torch.rand(5, 4)
    got = beam_search(m, imgs, beam_width=1, lower_bound=3, upper_bound=6)
    for i, cap in enumerate(got):
        seq = []
        while True:
            with torch.no_grad():
                logits = m(imgs[i][None], torch.tensor([[0, *seq]]))[0, -1].clone()
            logits[UNKNOWN_INDEX] = -math.inf
            if len(seq) + 1 < 3:
                logits[EDGE_INDEX] = -math.inf
            nxt = int(logits.argmax())
            if nxt == EDGE_INDEX:
                break
            seq.append(nxt)
            if len(seq) == 6:
                break
        assert cap == seq


def test_tiny_training_improves_pregen_and_restores_best():
    """Image i is described by caption i: a model that learns scores better pre-gen."""
    vocab = Vocabulary.build([["w%d" % k for k in range(8)]] * 5)
    rng = np.random.default_rng(0)
    caps = [vocab.encode(["w%d" % k for k in rng.permutation(8)[:4]]) for _ in range(6)]
    images = torch.eye(6)
    owner = list(range(6)) * 4
    train_caps = caps * 4
    torch.manual_seed(0)
    m = Captioner("merge", len(vocab), 6, scaled_hyperparams("merge", 8))
    ad = TorchModuleAdapter(m, len(vocab), EDGE_INDEX)
    before = tiers.compute(score_references(ad, list(images), [[c] for c in caps], EDGE_INDEX))
    log = train(m, images, train_caps, owner, images, caps, max_epochs=60, lr=0.02, seed=0)
    after = tiers.compute(score_references(ad, list(images), [[c] for c in caps], EDGE_INDEX))
    assert log.val_log_pplx[log.best_epoch] == min(log.val_log_pplx)
    assert log.val_log_pplx[log.best_epoch] < log.val_log_pplx[0] - 1.0
    assert after[tiers.BEST] > before[tiers.BEST]
    assert after["mean_mean_pplx_none"] < before["mean_mean_pplx_none"]
    assert not m.training
