"""Caps on caption length for the metrics whose cost grows faster than the length.

One absurd row (a megabyte pasted as a caption) must not take the machine down. Native
METEOR's matching and alignment, TER's shift search and SPICE-py's parse and graph matching
cost time and memory with the square of the caption length or worse (a 1 MB candidate: 22 GB
and 3 minutes in METEOR; over 10 minutes in SPICE-py), so
each refuses a caption above its cap, naming the item, instead of running out of memory. The
caps sit far above any caption of the benchmarks (the longest have a few dozen words), so
every number capeval reproduces is unaffected; docs/RELIABILITY.md lists them.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..errors import InputError

#: Words (whitespace-separated, after tokenization) per candidate or reference.
METEOR_MAX_WORDS = 5000
TER_MAX_WORDS = 1000
SPICE_MAX_WORDS = 1000
#: Characters per caption for SPICE-py: its word cap alone lets through 999 words of 1,001
#: characters, or one 1.2 MB word, which spaCy refuses with a raw ``[E088]`` past 1,000,000
#: characters (and parses slowly long before). 20,000 is 20 characters per word at the word cap.
SPICE_MAX_CHARS = 20_000


def check_lengths(family: str, candidates: Sequence[str], references: Sequence[Sequence[str]],
                  limit: int, why: str, max_chars: int | None = None) -> None:
    """Refuse the first caption of more than ``limit`` words, or of more than ``max_chars``
    characters when given (:class:`InputError` naming it)."""
    def words(text: str) -> int:
        # a word has at least one character: only texts longer than the limit need counting
        return len(text.split()) if len(text) > limit else 0

    for i, (cand, refs) in enumerate(zip(candidates, references)):
        for what, text in (("candidate", cand), *((f"reference {k}", r) for k, r in enumerate(refs))):
            if max_chars is not None and len(text) > max_chars:
                raise InputError(f"{what} of item {i} has {len(text):,} characters; {family} scores captions of at "
                                 f"most {max_chars:,} characters ({why}). Shorten or drop that row.")
            n = words(text)
            if n > limit:
                raise InputError(f"{what} of item {i} has {n:,} words; {family} scores captions of at most "
                                 f"{limit:,} words ({why}). Shorten or drop that row.")
