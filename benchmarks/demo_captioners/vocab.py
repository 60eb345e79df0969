"""The where-image2 vocabulary (METHODS.md §1.1): training tokens with frequency ≥ 5, sorted,
behind index 0 = ``<EDG>`` (start and end) and index 1 = ``<UNK>``."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from capeval.errors import InputError

EDGE = "<EDG>"
UNKNOWN = "<UNK>"
EDGE_INDEX = 0
UNKNOWN_INDEX = 1
MIN_TOKEN_FREQ = 5


@dataclass(frozen=True)
class Vocabulary:
    tokens: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.tokens[:2] != (EDGE, UNKNOWN):
            raise InputError(f"a vocabulary starts with {EDGE}, {UNKNOWN}; got {self.tokens[:2]}")
        object.__setattr__(self, "_index", {t: i for i, t in enumerate(self.tokens)})

    @classmethod
    def build(cls, captions: Iterable[Sequence[str]], min_freq: int = MIN_TOKEN_FREQ) -> "Vocabulary":
        counts = Counter(t for cap in captions for t in cap)
        kept = sorted(t for t, n in counts.items() if n >= min_freq and t not in (EDGE, UNKNOWN))
        return cls((EDGE, UNKNOWN, *kept))

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Token ids; unknown words map to ``<UNK>``, whose probability is the one scored."""
        get = self._index.get  # type: ignore[attr-defined]
        return [get(t, UNKNOWN_INDEX) for t in tokens]

    def decode(self, ids: Sequence[int]) -> list[str]:
        return [self.tokens[i] for i in ids]
