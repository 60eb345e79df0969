"""CLIP text embeddings of captions longer than the text tower's 77 tokens (``long_text``,
docs/LONG_CAPTIONS.md).

``truncate`` is ``clip.tokenize(truncate=True)``: the rest is dropped, and counted here.
``windows`` reads the whole caption: its sentences are packed, in order and whole where they fit,
into windows that each carry the prompt ("A photo depicts ...") and fill the context; a sentence
longer than a window is cut into equal pieces. Each window is embedded as a caption of its own,
L2-normalised, and the caption's embedding is the mean of its windows' weighted by their caption
tokens. Why: Long-CLIP (Zhang et al., 2024) measured CLIP's effective text length at about 20
tokens, so one embedding of 77 tokens already summarises rather than reads; averaging normalised
embeddings of caption-sized pieces keeps each piece in the distribution CLIP was trained on (short
"a photo of" captions) and gives every part of the text a weight by its length. A caption that
fits is embedded exactly as ``truncate`` embeds it.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def cut_tokens(enc, texts: Sequence[str]) -> dict[str, int]:
    """Tokens ``clip.tokenize(truncate=True)`` drops from each text it cuts (texts as the tower
    reads them, prompt included)."""
    if enc.full_ids is None:
        return {}
    distinct = list(dict.fromkeys(texts))
    return {t: len(r) - enc.context_length for t, r in zip(distinct, enc.full_ids(distinct))
            if len(r) > enc.context_length}


def split_sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def pack(sentences: Sequence[list[int]], width: int) -> list[list[int]]:
    """Sentences' token pieces packed in order into windows of at most ``width``: whole where a
    sentence fits, a longer sentence cut into equal parts."""
    out: list[list[int]] = []
    cur: list[int] = []
    for ids in sentences:
        parts = [ids]
        if len(ids) > width:
            k = -(-len(ids) // width)
            step = -(-len(ids) // k)
            parts = [ids[a:a + step] for a in range(0, len(ids), step)]
        for part in parts:
            if cur and len(cur) + len(part) > width:
                out.append(cur)
                cur = []
            cur = cur + part
    if cur:
        out.append(cur)
    return out


def window_rows(enc, prefix: Callable[[str], str], text: str) -> tuple[list[list[int]], list[int]]:
    """The rows of a caption that does not fit, and the caption tokens of each; ``prefix`` adds
    the prompt to a text."""
    head = enc.full_ids([prefix("")])[0][:-1]
    end = enc.full_ids([""])[0][-1]
    sentences = [r[1:-1] for r in enc.full_ids(split_sentences(text))]
    width = enc.context_length - len(head) - 1
    if width < 1:
        from ..errors import InputError

        raise InputError(f"the prompt {prefix('')!r} leaves no room in CLIP's {enc.context_length}-token context")
    windows = pack([s for s in sentences if s], width)
    rows = [[*head, *w, end] for w in windows]
    if enc.pad_to is not None:
        rows = [r + [0] * (enc.pad_to - len(r)) for r in rows]
    return rows, [len(w) for w in windows]


def text_embeddings(enc, prefix: Callable[[str], str], texts: Sequence[str], *, batch_size: int) -> np.ndarray:
    """One row per caption (``prefix`` adds the prompt): captions that fit as
    :func:`capeval.metrics._clip_models.text_embeddings` embeds them, longer ones as the
    token-weighted mean of their windows' normalised embeddings (module docstring)."""
    from ..errors import InputError
    from ..resources.torch_runner import default_workers, map_fixed
    from ._clip_models import text_embeddings as plain

    if enc.full_ids is None:
        raise InputError("long_text=windows needs a CLIP backend that exposes its tokenizer")
    distinct = list(dict.fromkeys(texts))
    prompted = [prefix(t) for t in distinct]
    long = {t for t, r in zip(distinct, enc.full_ids(prompted)) if len(r) > enc.context_length}
    short = [t for t in distinct if t not in long]
    out: dict[str, np.ndarray] = {}
    if short:
        out.update(zip(short, plain(enc, [prefix(t) for t in short], batch_size=batch_size)))
    plans = {t: window_rows(enc, prefix, t) for t in distinct if t in long}
    rows = [r for t in plans for r in plans[t][0]]
    if rows:
        got = map_fixed(lambda idx: enc.embed_ids([rows[i] for i in idx]), [len(r) for r in rows],
                        per_task=batch_size, workers=default_workers(enc.device))
        at = 0
        for t, (trows, weights) in plans.items():
            e = np.stack(got[at:at + len(trows)])
            e = e / np.sqrt(np.sum(e ** 2, axis=1, keepdims=True))
            at += len(trows)
            w = np.asarray(weights, dtype=e.dtype)
            out[t] = (w[:, None] * e).sum(axis=0) / w.sum()
    return np.stack([out[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)
