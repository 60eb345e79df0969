"""Where the paraphrase table's phrases occur in one line (word ids, -1 outside the table).

Two lookups per line, both over contiguous n-grams: the reference phrases it contains (the
jar's transducer reports them by start, then length) and the positions of each paraphrase
it contains (for matching against the other line). N-grams are only extended while they
can still become a wanted phrase, so a line costs about as many steps as it has phrase
prefixes in it, not ``length x longest phrase``.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence


def reference_phrases(ids: Sequence[int], keys: dict, bigrams: set[int], vocab_size: int,
                      max_len: int) -> list[tuple[int, int, tuple[int, ...]]]:
    """``(start, length, phrase)`` of each reference phrase (a key of ``keys``) in ``ids``, by
    start then length. ``bigrams`` holds every adjacent pair inside a key (as
    ``w1 * vocab_size + w2``): an n-gram with another pair is no key nor a key's prefix."""
    out = []
    n = len(ids)
    for start in range(n):
        prev = ids[start]
        if prev < 0:
            continue
        stop = min(n, start + max_len)
        end = start + 1
        while True:
            gram = tuple(ids[start:end])
            if gram in keys:
                out.append((start, end - start, gram))
            if end >= stop:
                break
            nxt = ids[end]
            if nxt < 0 or prev * vocab_size + nxt not in bigrams:
                break
            prev = nxt
            end += 1
    return out


def groups(table: dict[tuple[int, ...], list[tuple[int, ...]]]) -> dict[tuple[int, ...], tuple]:
    """Per reference phrase of ``table`` (its paraphrases in table order), what the matcher
    looks up: ``(paraphrases, the non-empty ones as a frozenset, {paraphrase: its indices
    in the list, ascending}, whether the empty paraphrase is among them)``."""
    out = {}
    for ref, pars in table.items():
        index: dict[tuple[int, ...], list[int]] = {}
        for k, par in enumerate(pars):
            got = index.get(par)
            if got is None:
                index[par] = [k]
            else:
                got.append(k)
        out[ref] = (pars, frozenset(p for p in index if p), index, () in index)
    return out


def prefixes(phrases: Iterable[tuple[int, ...]]) -> tuple[set[tuple[int, ...]], int]:
    """Every non-empty prefix of ``phrases`` (the phrases included), and the longest length."""
    out: set[tuple[int, ...]] = set()
    longest = 0
    for p in phrases:
        n = len(p)
        if n > longest:
            longest = n
        for k in range(1, n + 1):
            out.add(p[:k])
    return out, longest


def positions(ids: Sequence[int], wanted: set, wanted_prefixes: set, max_len: int) -> dict[tuple[int, ...], list[int]]:
    """{phrase: its start positions in ``ids``, ascending} for the non-empty phrases of
    ``wanted`` that occur (``wanted_prefixes``: every prefix of them)."""
    out: dict[tuple[int, ...], list[int]] = {}
    n = len(ids)
    for start in range(n):
        for end in range(start + 1, min(n, start + max_len) + 1):
            gram = tuple(ids[start:end])
            if gram not in wanted_prefixes:
                break
            if gram in wanted:
                got = out.get(gram)
                if got is None:
                    out[gram] = [start]
                else:
                    got.append(start)
    return out


class PhraseIndex:
    """The paraphrase entries of one batch of lines: ``table`` (reference phrase → its
    paraphrases in table order, for the reference phrases found in the lines), with what
    the matchers look up in it, each built on first use: the :func:`groups`, the wanted
    paraphrases and their :func:`prefixes` (for :func:`positions`), and each reference
    phrase's paraphrases packed for the compiled core (``core.group``)."""

    def __init__(self, table: dict[tuple[int, ...], list[tuple[int, ...]]]) -> None:
        self.table = table
        self._groups = None
        self._wanted = None
        self._packed = None

    @property
    def groups(self) -> dict[tuple[int, ...], tuple]:
        if self._groups is None:
            self._groups = groups(self.table)
        return self._groups

    def positions(self, ids: Sequence[int], find=None) -> dict[tuple[int, ...], list[int]]:
        """:func:`positions` of the non-empty paraphrases in ``ids`` (``find``: a function
        equal to :func:`positions`, e.g. the compiled one)."""
        if self._wanted is None:
            wanted = {p for ps in self.table.values() for p in ps if p}  # the empty one: Line.where
            self._wanted = (wanted, *prefixes(wanted))
        return (find or positions)(ids, *self._wanted)

    def packed(self, core) -> dict[tuple[int, ...], bytes]:
        if self._packed is None:
            self._packed = {g: core.group(pars) for g, pars in self.table.items()}
        return self._packed
