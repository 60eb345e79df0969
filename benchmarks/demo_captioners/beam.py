"""where-image2 beam search (METHODS.md §2.5), batched over images.

Scores are sums of log2 probabilities with no length normalisation. ``<UNK>`` is never
generated. The end token completes a prefix (without adding a word) only once the prefix,
start token included, has at least ``lower_bound`` tokens; a prefix that already has
``upper_bound`` tokens becomes complete when extended. Completed prefixes stay in the beam
unchanged; on equal log-probability a complete entry ranks above an incomplete one. An image
is finished as soon as its best entry is complete.
"""
from __future__ import annotations

import torch

from capeval.errors import InputError
from .vocab import EDGE_INDEX, UNKNOWN_INDEX


def _order(scores: torch.Tensor, complete: torch.Tensor) -> torch.Tensor:
    """Indices sorting each row by (score desc, complete first on ties)."""
    by_complete = torch.sort((~complete).to(torch.int8), dim=1, stable=True).indices
    s = torch.gather(scores, 1, by_complete)
    by_score = torch.sort(s, dim=1, descending=True, stable=True).indices
    return torch.gather(by_complete, 1, by_score)


@torch.inference_mode()
def beam_search(
    model,
    images: torch.Tensor,
    beam_width: int,
    lower_bound: int = 5,
    upper_bound: int = 50,
    temperature: float = 1.0,
    batch_size: int = 500,
) -> list[list[int]]:
    """Token ids (no start/end token) of the best caption for each image."""
    if beam_width < 1 or lower_bound < 1 or upper_bound < lower_bound:
        raise InputError(
            f"bad beam settings: width {beam_width}, bounds {lower_bound}..{upper_bound}"
        )
    was_training = model.training
    model.eval()
    try:
        out: list[list[int]] = []
        for lo in range(0, images.shape[0], batch_size):
            out.extend(_search(model, images[lo : lo + batch_size], beam_width, lower_bound, upper_bound, temperature))
        return out
    finally:
        if was_training:
            model.train()


def _search(model, images, W, lower, upper, temperature):
    n = images.shape[0]
    img = model.image_vector(images)  # [N, D]
    start = torch.full((n,), EDGE_INDEX, dtype=torch.int64)
    h0 = model.step(img, model.initial_state(img), start)  # state after reading [EDG]
    R = h0.shape[1]
    V = model.vocab_size
    logp = torch.full((n, W), -torch.inf, dtype=torch.float64)
    logp[:, 0] = 0.0
    complete = torch.zeros((n, W), dtype=torch.bool)
    h = h0[:, None, :].expand(n, W, R).contiguous()
    words = torch.zeros((n, W, upper), dtype=torch.int64)
    nwords = torch.zeros((n, W), dtype=torch.int64)
    done = torch.zeros(n, dtype=torch.bool)
    arangeW = torch.arange(W)
    while not bool(done.all()):
        a = torch.nonzero(~done)[:, 0]
        na = a.numel()
        img_a = img[a][:, None, :].expand(na, W, img.shape[1]).reshape(na * W, -1)
        logits = model.next_logits(img_a, h[a].reshape(na * W, R)) / temperature
        lp2 = torch.log_softmax(logits.double(), dim=1) / torch.log(torch.tensor(2.0, dtype=torch.float64))
        lp2 = lp2.reshape(na, W, V)
        lp2[:, :, UNKNOWN_INDEX] = -torch.inf
        prefix_len = nwords[a] + 1  # the start token counts
        lp2[:, :, EDGE_INDEX] = torch.where(prefix_len >= lower, lp2[:, :, EDGE_INDEX], -torch.inf)
        cand = logp[a][:, :, None] + lp2
        cand[complete[a]] = -torch.inf  # complete entries are carried, not extended
        ext_score, flat = torch.topk(cand.reshape(na, W * V), W, dim=1)
        parent = flat // V
        token = flat % V
        parent_len = torch.gather(prefix_len, 1, parent)
        ext_complete = (token == EDGE_INDEX) | (parent_len == upper)
        carried_score = torch.where(complete[a], logp[a], torch.tensor(-torch.inf, dtype=torch.float64))
        scores = torch.cat([ext_score, carried_score], 1)  # [na, 2W]
        comp = torch.cat([ext_complete, complete[a]], 1)
        src = torch.cat([parent, arangeW.expand(na, W)], 1)
        tok = torch.cat([token, torch.full((na, W), -1, dtype=torch.int64)], 1)
        order = _order(scores, comp)[:, :W]
        new_score = torch.gather(scores, 1, order)
        new_comp = torch.gather(comp, 1, order) & torch.isfinite(new_score)
        new_src = torch.gather(src, 1, order)
        new_tok = torch.gather(tok, 1, order)
        rows = torch.arange(na)[:, None].expand(na, W)
        new_words = words[a][rows, new_src].clone()
        new_n = nwords[a][rows, new_src].clone()
        new_h = h[a][rows, new_src].clone()
        adds = (new_tok >= 0) & (new_tok != EDGE_INDEX) & torch.isfinite(new_score)
        if bool(adds.any()):
            r_i, w_i = torch.nonzero(adds, as_tuple=True)
            new_words[r_i, w_i, new_n[r_i, w_i]] = new_tok[r_i, w_i]
            new_n[r_i, w_i] += 1
            new_h[r_i, w_i] = model.step(
                img[a][r_i], new_h[r_i, w_i].contiguous(), new_tok[r_i, w_i]
            )
        logp[a] = new_score
        complete[a] = new_comp
        words[a] = new_words
        nwords[a] = new_n
        h[a] = new_h
        done[a] = new_comp[:, 0]
    return [words[i, 0, : int(nwords[i, 0])].tolist() for i in range(n)]
