"""The four where-image2 caption generators (init, pre, par, merge) in PyTorch (METHODS.md §2).

Demonstration models for the pre-gen metrics, not a port of trained weights (none are
published). Differences from the TF original that a reader should know: PyTorch's GRU applies
the reset gate after the recurrent matrix and has two bias vectors, so parameter counts differ
slightly from §2.4; everything else (image L2 normalisation, linear image projection, where the
image enters, learnable initial state, clipped initialisation, loss with padding in the
denominator, no length normalisation in beam search) follows the specification.

Import this module only when torch is wanted; ``import capeval`` never does.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from capeval.errors import InputError

ARCHITECTURES = ("init", "pre", "par", "merge")


@dataclass(frozen=True)
class Hyperparams:
    embed_size: int
    rnn_size: int
    post_image_size: int
    init_method: str  # "normal" | "xavier_normal"
    init_clip: float
    learnable_init_state: bool
    image_dropout: float
    embedding_dropout: float
    rnn_dropout: float
    l2_weight: float
    batch_size: int
    beam_width: int

    def as_dict(self) -> dict:
        return asdict(self)


# where-image2 config.py (METHODS.md §2.3).
PAPER_HYPERPARAMS = {
    "init": Hyperparams(512, 512, 512, "xavier_normal", 0.01, False, 0.0, 0.5, 0.5, 0.0, 128, 3),
    "pre": Hyperparams(512, 512, 512, "normal", 0.1, False, 0.0, 0.5, 0.5, 0.0, 32, 3),
    "par": Hyperparams(256, 256, 256, "normal", 0.1, True, 0.5, 0.5, 0.5, 1e-8, 64, 5),
    "merge": Hyperparams(128, 128, 128, "normal", 0.1, True, 0.0, 0.0, 0.5, 0.0, 128, 3),
}


def scaled_hyperparams(arch: str, factor: int) -> Hyperparams:
    """The paper's settings with layer sizes divided by ``factor`` (everything else kept)."""
    hp = PAPER_HYPERPARAMS[arch]
    d = asdict(hp)
    for k in ("embed_size", "rnn_size", "post_image_size"):
        d[k] = max(1, d[k] // factor)
    return Hyperparams(**d)


class Captioner(nn.Module):
    """GRU caption generator with the image injected as ``arch`` says."""

    def __init__(self, arch: str, vocab_size: int, image_size: int, hp: Hyperparams) -> None:
        super().__init__()
        if arch not in ARCHITECTURES:
            raise InputError(f"unknown architecture {arch!r}; expected one of {ARCHITECTURES}")
        if arch == "init" and hp.rnn_size != hp.post_image_size:
            raise InputError("init needs rnn_size == post_image_size (the image is the GRU state)")
        if arch == "pre" and hp.embed_size != hp.post_image_size:
            raise InputError("pre needs embed_size == post_image_size (the image is the first input)")
        self.arch = arch
        self.hp = hp
        self.vocab_size = vocab_size
        self.image_proj = nn.Linear(image_size, hp.post_image_size)
        self.embedding = nn.Embedding(vocab_size, hp.embed_size)
        gru_in = hp.embed_size + (hp.post_image_size if arch == "par" else 0)
        self.gru = nn.GRU(gru_in, hp.rnn_size, batch_first=True)
        out_in = hp.rnn_size + (hp.post_image_size if arch == "merge" else 0)
        self.out = nn.Linear(out_in, vocab_size)
        self.init_state = (
            nn.Parameter(torch.zeros(1, hp.rnn_size))
            if hp.learnable_init_state and arch in ("par", "merge")
            else None
        )
        self.image_dropout = nn.Dropout(hp.image_dropout)
        self.embedding_dropout = nn.Dropout(hp.embedding_dropout)
        self.rnn_dropout = nn.Dropout(hp.rnn_dropout)
        self._initialise()

    def _initialise(self) -> None:
        for name, p in self.named_parameters():
            if p.dim() == 1:
                nn.init.zeros_(p)  # biases
                continue
            if self.hp.init_method == "xavier_normal":
                nn.init.xavier_normal_(p)
            else:
                nn.init.normal_(p)
            with torch.no_grad():
                # A clipped (not truncated) normal: with ±0.1 most weights sit at the clip
                # value, which is what the original code does.
                p.clamp_(-self.hp.init_clip, self.hp.init_clip)

    # -- pieces ---------------------------------------------------------------------
    def image_vector(self, images: torch.Tensor) -> torch.Tensor:
        images = nn.functional.normalize(images, p=2, dim=1)
        return self.image_proj(self.image_dropout(images))

    def initial_state(self, img: torch.Tensor) -> torch.Tensor:
        """GRU state [B, R] before the first word is read."""
        b = img.shape[0]
        if self.arch == "init":
            return img
        h0 = (
            self.init_state.expand(b, -1)
            if self.init_state is not None
            else img.new_zeros(b, self.hp.rnn_size)
        )
        if self.arch == "pre":
            _, h = self.gru(img[:, None, :], h0[None].contiguous())
            return h[0]
        return h0

    def _rnn_input(self, emb: torch.Tensor, img: torch.Tensor) -> torch.Tensor:
        if self.arch == "par":
            return torch.cat([img[:, None, :].expand(-1, emb.shape[1], -1), emb], 2)
        return emb

    def _logits(self, rnn_out: torch.Tensor, img: torch.Tensor) -> torch.Tensor:
        rnn_out = self.rnn_dropout(rnn_out)
        if self.arch == "merge":
            rnn_out = torch.cat([img[:, None, :].expand(-1, rnn_out.shape[1], -1), rnn_out], 2)
        return self.out(rnn_out)

    # -- teacher forcing ------------------------------------------------------------
    def forward(self, images: torch.Tensor, inputs: torch.Tensor, lengths=None) -> torch.Tensor:
        """Logits [B, T, V] for prefixes ``inputs`` [B, T] (start token first).

        The GRU is causal, so padding after a sequence's end cannot change its positions;
        ``lengths`` is accepted for the adapter protocol and not needed.
        """
        img = self.image_vector(images)
        h0 = self.initial_state(img)
        emb = self.embedding_dropout(self.embedding(inputs))
        out, _ = self.gru(self._rnn_input(emb, img), h0[None].contiguous())
        return self._logits(out, img)

    # -- incremental decoding (beam search) -----------------------------------------
    def step(self, img: torch.Tensor, h: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Next GRU state after reading ``tokens`` [B]."""
        emb = self.embedding(tokens)[:, None, :]
        _, h2 = self.gru(self._rnn_input(emb, img), h[None].contiguous())
        return h2[0]

    def next_logits(self, img: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """Logits [B, V] of the next token given the state after the prefix."""
        return self._logits(h[:, None, :], img)[:, 0]

    def l2_penalty(self) -> torch.Tensor:
        """Σw²/2 over all 2-D trainable tensors, the learnable initial state included."""
        total = torch.zeros(())
        for p in self.parameters():
            if p.dim() == 2:
                total = total + (p * p).sum() / 2
        return total
