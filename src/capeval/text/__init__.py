"""Tokenizers by name. Every tokenizer maps one caption to one space-joined token string.

``ptb``      pure-Python emulation of pycocoevalcap's PTBTokenizer pipeline (default).
``ptb-java`` the CoreNLP 3.4.1 jar shipped in pycocoevalcap, with line-count checks.
``ptb-batch`` ``ptb`` as pycocoevalcap sees one batch: the candidates, and then the
             references, each as one file in input order, where a caption's last token can
             depend on the next caption (docs/TOKENIZER.md, "Context across lines"). Equal to
             one pycocoevalcap run token for token; in-memory only (a chunk boundary would
             change the context).
``none``     text passed through unchanged (for pre-tokenized input).
"""
from __future__ import annotations

import importlib
from collections.abc import Sequence
from itertools import accumulate, chain

from .._version import __version__
from ..errors import InputError

TOKENIZERS = {
    "ptb": ("capeval.text.ptb", "tokenize"),
    "ptb-java": ("capeval.text.ptb_java", "tokenize"),
}


#: Tokenizers whose output for a caption depends on the captions after it in the batch.
BATCH_CONTEXT = frozenset({"ptb-batch"})


def available_tokenizers() -> list[str]:
    return ["ptb", "ptb-java", "ptb-batch", "none"]


def tokenizer_id(name: str) -> str:
    """The value stamped in signatures' ``tok`` field."""
    if name == "ptb":
        return f"ptb-py@{__version__}"
    if name == "ptb-java":
        return "ptb-java-3.4.1"
    if name == "ptb-batch":
        return f"ptb-batch-py@{__version__}"
    if name == "none":
        return "none"
    raise InputError(f"unknown tokenizer {name!r}; choose from {available_tokenizers()}")


def tokenize(texts: Sequence[str], tokenizer: str = "ptb") -> list[str]:
    """Tokenize ``texts``; each distinct string is tokenized once (captions repeat a lot)."""
    tokenizer_id(tokenizer)
    if tokenizer == "none":
        return list(texts)
    if tokenizer == "ptb-batch":
        # Not deduplicated: a caption's tokens depend on the one after it.
        from .ptb import tokenize_lines

        return tokenize_lines(texts)
    module, attr = TOKENIZERS[tokenizer]
    fn = getattr(importlib.import_module(module), attr)
    unique = list(dict.fromkeys(texts))
    mapping = dict(zip(unique, fn(unique)))
    return list(map(mapping.__getitem__, texts))


def tokenize_corpus(
    candidates: Sequence[str], references: Sequence[Sequence[str]], tokenizer: str = "ptb"
) -> tuple[list[str], list[list[str]]]:
    """Tokenize candidates and references in one pass over their distinct strings (with
    ``ptb-batch``: the candidates as one batch, then the references as another, as
    pycocoevalcap tokenizes its ``res`` and ``gts``)."""
    if tokenizer == "ptb-batch":
        cands = tokenize(candidates, tokenizer)
        refs_flat = tokenize(list(chain.from_iterable(references)), tokenizer)
        ends = list(accumulate(map(len, references), initial=0))
        return cands, list(map(refs_flat.__getitem__, map(slice, ends[:-1], ends[1:])))
    flat = list(candidates)
    flat.extend(chain.from_iterable(references))
    toks = tokenize(flat, tokenizer)
    n = len(candidates)
    ends = list(accumulate(map(len, references), initial=n))
    return toks[:n], list(map(toks.__getitem__, map(slice, ends[:-1], ends[1:])))
