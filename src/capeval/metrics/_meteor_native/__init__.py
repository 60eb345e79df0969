"""METEOR 1.5 without Java: coco's jar (``-l en -norm``) reimplemented in Python.

Pipeline per scoring unit, as the jar's ``-stdio`` mode runs it for pycocoevalcap: the
hypothesis is cleaned as the wrapper cleans it, every field trimmed (``String.trim``),
normalised and lower-cased (:mod:`.normalize`), split into words (``StringTokenizer``),
aligned with each reference (:mod:`.align`); the reference whose score is highest (the
first on ties) gives the unit's statistics; the score of those statistics is the unit's
METEOR, and the corpus METEOR is the score of all rows' statistics aggregated
(:mod:`.score`). Resources come from the jar and its paraphrase table (:mod:`.resources`).

Work is shared and skipped where it cannot matter: every distinct word is analysed once;
every distinct (hypothesis, reference) word sequence pair gets an upper bound of its score,
and only pairs that can still be their unit's best are aligned (:meth:`NativeMeteor._pair_stats`);
the paraphrase table is narrowed before matching: to the entries whose words all occur in
the batch, then to those whose reference phrase occurs in some line (:mod:`.phrases`).
"""
from __future__ import annotations

import gc
from collections.abc import Sequence

import numpy as np

from . import compiled
from . import phrases, powtable
from .align import Line, pair_bound, pair_stats
from .normalize import line_words
from .resources import MeteorResources, load
from .score import score_one, scores
from .words import WordTable

__all__ = ["NativeMeteor", "load"]


class NativeMeteor:
    """Score units against the jar's resources (loaded, and converted on first use, lazily)."""

    def __init__(self, jar: str | None = None) -> None:
        self._jar = jar
        self._res: MeteorResources | None = None
        self._words: WordTable | None = None

    @property
    def resources(self) -> MeteorResources:
        if self._res is None:
            self._res = load(self._jar)
            self._words = WordTable(self._res)
        return self._res

    def _line_words(self, text: str, cache: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
        got = cache.get(text)
        if got is None:
            got = cache[text] = tuple(line_words(text, self.resources.nonbreaking))
        return got

    def unit_stats(self, hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> np.ndarray:
        """``(n, 23)`` statistics of each unit (hypotheses already cleaned as the wrapper does)."""
        # Alignment allocates millions of small tuples, lists and dicts, none of them in a
        # reference cycle; the cyclic collector would rescan them over and over (a quarter of
        # the CPU time on Flickr8k-Expert), so it is paused here and restored after.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._unit_stats(hyps, refs)
        finally:
            if was_enabled:
                gc.enable()

    def _unit_stats(self, hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> np.ndarray:
        hyp_w, ref_w, lines = self.lines(hyps, refs)
        line = lines.__getitem__
        # Distinct (hypothesis, reference) pairs, and each unit's pairs in reference order.
        pair_index: dict[tuple, int] = {}
        pairs: list[tuple[Line, Line]] = []
        unit_pairs: list[list[int]] = []
        for hw, rws in zip(hyp_w, ref_w):
            ids = []
            for rw in rws:
                key = (hw, rw)
                k = pair_index.get(key)
                if k is None:
                    k = pair_index[key] = len(pairs)
                    pairs.append((line(hw), line(rw)))
                ids.append(k)
            unit_pairs.append(ids)
        found = self._pair_stats(pairs, unit_pairs)
        # Pairs left unaligned cannot be their unit's best (below); their rows stay zero.
        aligned = np.array([st is not None for st in found], dtype=bool)
        stats = np.zeros((len(pairs), 23), dtype=np.float64)
        if aligned.any():
            stats[aligned] = np.asarray([st for st in found if st is not None], dtype=np.float64)
        pair_scores = scores(stats)
        best = np.empty(len(unit_pairs), dtype=np.int64)
        for u, ids in enumerate(unit_pairs):
            # MeteorScorer keeps the first reference unless a later one scores strictly higher
            b = -1
            for k in ids:
                if aligned[k] and (b < 0 or pair_scores[k] > pair_scores[b]):
                    b = k
            best[u] = b
        return stats[best]

    def lines(self, hyps: Sequence[str], refs: Sequence[Sequence[str]]):
        """The words of each hypothesis and reference, and a :class:`.align.Line` for every
        distinct word sequence among them."""
        res = self.resources
        words = self._words
        norm_cache: dict[str, tuple[str, ...]] = {}
        hyp_w = [self._line_words(h, norm_cache) for h in hyps]
        ref_w = [[self._line_words(r, norm_cache) for r in rs] for rs in refs]
        vocab = set()
        for ws in norm_cache.values():
            vocab.update(ws)
        info = {w: words.info(w) for w in vocab}
        distinct = list(dict.fromkeys(norm_cache.values()))
        para_of = {w: i.para for w, i in info.items()}
        para_ids = [list(map(para_of.__getitem__, ws)) for ws in distinct]
        v = len(res.paraphrase.vocab)
        bigrams = {a * v + b for x in para_ids for a, b in zip(x, x[1:]) if a >= 0 and b >= 0}
        batch = res.paraphrase.restricted(set(para_of.values()), bigrams)
        # Reference phrases first (their paraphrases are only needed for those found), then
        # where the paraphrases of those occur.
        core = compiled.core
        if core is None:
            found = [phrases.reference_phrases(x, batch.keys, batch.key_bigrams, batch.vocab_size, batch.key_max)
                     for x in para_ids]
        else:  # one-word phrases as words and the pairs as sorted integers: no lookup allocates
            unigrams = {k[0] for k in batch.keys if len(k) == 1}
            codes = np.sort(np.fromiter(batch.key_bigrams, dtype=np.int64, count=len(batch.key_bigrams))).tobytes()
            found = [core.reference_phrases(x, batch.keys, batch.key_bigrams, batch.vocab_size, batch.key_max,
                                            unigrams, codes) for x in para_ids]
        index = phrases.PhraseIndex(batch.paraphrases({batch.keys[g] for occ in found for _, _, g in occ}))
        if core is None:
            rows = {w: (*i.row, None) for w, i in info.items()}
        else:  # the compiled core finds paraphrases by table ids: no n-gram positions needed
            rows = {w: (*i.row, core.word(i.key, i.stem_key, i.synsets, i.function, i.para))
                    for w, i in info.items()}
        lines: dict[tuple[str, ...], Line] = {}
        for ws, x, occ in zip(distinct, para_ids, found):
            lines[ws] = Line(ws, list(map(rows.__getitem__, ws)), occ, x, index,
                             index.positions(x) if core is None else None)
        return hyp_w, ref_w, lines

    @staticmethod
    def _pair_stats(pairs: list[tuple[Line, Line]], unit_pairs: list[list[int]]) -> list[tuple | None]:
        """The jar's statistics of every pair some unit may pick; None for the others.

        Only a unit's best reference counts, so a pair whose score cannot reach the best
        score already found for its unit is not aligned at all: a unit's pairs are visited
        by decreasing upper bound of their score (:func:`.score.upper_bound`, from the
        candidate matches alone) and the search stops at the first bound below the best
        score so far. The margin dwarfs rounding in the bound and the plain-float score,
        so a pair skipped scores strictly below the unit's best and the jar's choice (the
        first reference with the highest score) is unchanged."""
        found: list = [None] * len(pairs)
        bounds: list[float] = [0.0] * len(pairs)
        for k, (l1, l2) in enumerate(pairs):
            bounds[k], found[k] = pair_bound(l1, l2)
        out: list[tuple | None] = [None] * len(pairs)
        score_of: dict[int, float] = {}
        score = score_one if compiled.core is None or not powtable.core_agrees() else compiled.core.score_one
        for ids in unit_pairs:
            best = -1.0
            for k in sorted(dict.fromkeys(ids), key=bounds.__getitem__, reverse=True):
                if bounds[k] < best - _BOUND_MARGIN:
                    break
                got = score_of.get(k)
                if got is None:
                    l1, l2 = pairs[k]
                    st = out[k] = pair_stats(l1, l2, found[k])
                    got = score_of[k] = score(st)
                if got > best:
                    best = got
        return out


#: How far below a unit's best score a pair's upper bound must be for the pair to be
#: skipped; rounding in either is below 1e-15.
_BOUND_MARGIN = 1e-9

