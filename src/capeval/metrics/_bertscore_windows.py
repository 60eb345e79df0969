"""BERTScore over text longer than the encoder's window (``long_text=windows``, docs/LONG_CAPTIONS.md).

A sentence longer than the window is cut into overlapping windows of at most ``window - 2``
content tokens, half a window apart, each wrapped in the sentence's own first and last special
tokens and embedded as a sentence of its own; each token then takes its embedding from the
window where it has the most context on its poorer side, as the sliding-window reading of long
documents with BERT does (Devlin et al. 2019, SQuAD's document stride; Beltagy et al. 2020 on
the cost of longer windows). A sentence that fits is embedded exactly as in ``truncate`` mode,
so short captions score the same in both modes.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence


def token_window(tokenizer) -> int | None:
    """The tokenizer's length limit (special tokens included), or None when it has none:
    tokenizers without one report a huge ``model_max_length``."""
    limit = tokenizer.model_max_length
    return limit if limit is not None and limit < 1_000_000 else None


def cut_tokens(sentences: Sequence[str], ids: Sequence[Sequence[int]], limit: int | None,
               whole: Callable[[list[str]], list[list[int]]]) -> dict[str, int]:
    """Tokens truncation dropped from each sentence it cut (``ids``: the truncated ids; ``whole``
    tokenizes without truncation): only sentences that reach the window are tokenized again."""
    if limit is None:
        return {}
    at = [k for k, t in enumerate(ids) if len(t) >= limit]
    if not at:
        return {}
    full = whole([sentences[k] for k in at])
    return {sentences[k]: len(w) - limit for k, w in zip(at, full) if len(w) > limit}


def window_spans(n: int, width: int) -> list[tuple[int, int]]:
    """Overlapping windows ``[a, b)`` of at most ``width`` tokens over ``n`` content tokens,
    half a window apart, the last one ending at ``n``."""
    if n <= width:
        return [(0, n)]
    stride = max(1, width // 2)
    starts = list(range(0, n - width, stride)) + [n - width]
    return [(a, a + width) for a in starts]


def best_window(spans: Sequence[tuple[int, int]], n: int) -> list[int]:
    """For each content position, the window in which it has the most context on its poorer
    side (the larger ``min(left, right)``; the earlier window on a tie)."""
    out = []
    for p in range(n):
        best, score = 0, -1
        for w, (a, b) in enumerate(spans):
            if a <= p < b and min(p - a, b - 1 - p) > score:
                best, score = w, min(p - a, b - 1 - p)
        out.append(best)
    return out



def plan_windows(ids_list: Sequence[Sequence[int]], window: int) -> tuple[list[list[int]], list]:
    """The pieces to embed and, per sentence, where its embeddings come from: a piece index (the
    sentence fits) or ``(piece of each position, row of the position in that piece)``."""
    pieces: list[list[int]] = []
    plans: list = []
    width = window - 2
    for ids in ids_list:
        ids = list(ids)
        if len(ids) <= window:
            plans.append(len(pieces))
            pieces.append(ids)
            continue
        content = ids[1:-1]
        spans = window_spans(len(content), width)
        first = len(pieces)
        pieces.extend([ids[0], *content[a:b], ids[-1]] for a, b in spans)
        chosen = best_window(spans, len(content))
        last = len(spans) - 1
        piece = [first] + [first + w for w in chosen] + [first + last]
        row = [0] + [p - spans[w][0] + 1 for p, w in enumerate(chosen)] + [spans[last][1] - spans[last][0] + 1]
        plans.append((piece, row))
    return pieces, plans


def stitch(embs: dict[int, list], plans: Sequence, layers: Sequence[int]) -> dict[int, list]:
    """Per layer, each sentence's token embeddings assembled from its pieces' (:func:`plan_windows`)."""
    import torch

    out: dict[int, list] = {}
    for layer in layers:
        got = embs[layer]
        rows = []
        for plan in plans:
            if isinstance(plan, int):
                rows.append(got[plan])
            else:
                piece, row = plan
                rows.append(torch.stack([got[k][j] for k, j in zip(piece, row)]))
        out[layer] = rows
    return out
