"""CLIP's byte-level BPE tokenizer, reading the merges file OpenAI released
(``bpe_simple_vocab_16e6.txt.gz``, also shipped inside the ``clip`` and ``open_clip`` packages).

Behaviour follows OpenAI's ``SimpleTokenizer`` and ``clip.tokenize(..., truncate=True)``:
ftfy repair, HTML unescaping twice, whitespace collapsing, lower case; the same pre-tokenizing
pattern; the first 48,894 merges of the file; ``<|startoftext|>`` + tokens + ``<|endoftext|>``
cut to the context length with the last kept token replaced by ``<|endoftext|>``; zero padding.
"""
from __future__ import annotations

import gzip
import html
from functools import lru_cache
from pathlib import Path

from ..errors import ResourceNotFound

SOT = "<|startoftext|>"
EOT = "<|endoftext|>"
#: OpenAI keeps merges 1..48894 of the file (its vocabulary is 49,408 = 2*256 bytes + merges + 2).
MAX_MERGES = 49152 - 256 - 2


@lru_cache(maxsize=1)
def byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character table."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    table = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table  # insertion order is the vocabulary's order: kept bytes first, then the rest


class ClipBPE:
    """Token ids of text, from a merges file (gzipped or plain)."""

    def __init__(self, merges_path: str | Path) -> None:
        import regex

        path = Path(merges_path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise ResourceNotFound(f"CLIP BPE merges file {path} cannot be read: {exc}") from None
        text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")
        lines = text.split("\n")[1:MAX_MERGES + 1]  # line 0 is a version header
        merges = [tuple(line.split()) for line in lines if line.strip()]
        if not merges or any(len(m) != 2 for m in merges):
            raise ResourceNotFound(f"{path} is not a CLIP BPE merges file (two symbols per line)")
        symbols = list(byte_to_unicode().values())
        vocab = symbols + [s + "</w>" for s in symbols] + ["".join(m) for m in merges] + [SOT, EOT]
        self.encoder = {tok: i for i, tok in enumerate(vocab)}
        self.ranks = {m: i for i, m in enumerate(merges)}
        self.sot = self.encoder[SOT]
        self.eot = self.encoder[EOT]
        self.vocab_size = len(vocab)
        self._cache = {SOT: SOT, EOT: EOT}
        self._pattern = regex.compile(
            r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+""",
            regex.IGNORECASE,
        )
        self._ws = regex.compile(r"\s+")

    def _bpe(self, token: str) -> str:
        hit = self._cache.get(token)
        if hit is not None:
            return hit
        word = list(token[:-1]) + [token[-1] + "</w>"]
        while len(word) > 1:
            best = None
            for pair in zip(word, word[1:]):
                rank = self.ranks.get(pair)
                if rank is not None and (best is None or rank < best[0]):
                    best = (rank, pair)
            if best is None:
                break
            first, second = best[1]
            merged: list[str] = []
            i = 0
            while i < len(word):  # every non-overlapping occurrence, left to right
                if i < len(word) - 1 and word[i] == first and word[i + 1] == second:
                    merged.append(first + second)
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = merged
        out = " ".join(word)
        self._cache[token] = out
        return out

    def clean(self, text: str) -> str:
        import ftfy

        text = html.unescape(html.unescape(ftfy.fix_text(text))).strip()
        return self._ws.sub(" ", text).strip().lower()

    def encode(self, text: str) -> list[int]:
        table = byte_to_unicode()
        ids: list[int] = []
        for token in self._pattern.findall(self.clean(text)):
            token = "".join(table[b] for b in token.encode("utf-8"))
            ids.extend(self.encoder[piece] for piece in self._bpe(token).split(" "))
        return ids

    def tokenize(self, texts: list[str], context_length: int = 77) -> list[list[int]]:
        """Ids of each text, truncated as ``clip.tokenize(truncate=True)`` truncates (unpadded)."""
        rows = []
        for text in texts:
            ids = [self.sot, *self.encode(text), self.eot]
            if len(ids) > context_length:
                ids = ids[:context_length]
                ids[-1] = self.eot
            rows.append(ids)
        return rows
