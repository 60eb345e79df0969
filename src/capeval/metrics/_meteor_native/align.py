"""METEOR 1.5's aligner: candidate matches by module, then the jar's beam search.

Follows ``edu.cmu.meteor.aligner`` step for step, including what changes results:

* Matches are collected per reference position in the jar's order: exact, stem, synonym
  (each scanning reference positions, then hypothesis positions), then paraphrases of
  reference phrases found in the hypothesis, then paraphrases of hypothesis phrases found in
  the reference. Identical word sequences use the exact module only.
* A position with a single match whose words no other match covers is fixed in advance.
* The beam (40 paths) advances one reference position at a time; paths are ranked by the
  weighted match count, then fewer chunks, then smaller distance, with a stable sort. The
  search uses weights 1, 0.5, 0.5, 0.5 and keeps the weighted counts in ``int`` fields, so
  each addition is truncated (a one-word stem match adds nothing to the ranking).
* When a path branches on a match, the distance is added to the parent path (which goes
  on as the "skip this position" path and is copied by later branches), not to the branch.
* The final chunk count is recomputed from the chosen matches.

A match is ``(start, length, match_start, match_length, module)``: ``start``/``length`` in
the reference (line 2), ``match_*`` in the hypothesis (line 1).

Speed: everything about one word sequence (word facts, positions of each word, stem and
synset, its n-grams and the paraphrase table's phrases in it) is computed once per distinct
sequence (:class:`Line`); search paths are tuples whose used-word sets are bit masks, and the
weighted-count increments are precomputed per match (adding ``k * 0.5`` to an integer and
truncating adds ``int(k * 0.5)``).
"""
from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter

from .words import WordInfo

EXACT, STEM, SYNONYM, PARAPHRASE = 0, 1, 2, 3
N_MODULES = 4
#: The aligner's own weights (MeteorScorer sets these for the search; the scoring weights
#: 1, 0.6, 0.8, 0.6 are applied later).
SEARCH_WEIGHTS = (1.0, 0.5, 0.5, 0.5)
BEAM_SIZE = 40

Match = tuple  # (start, length, match_start, match_length, module)


class Line:
    """One word sequence with everything the matchers need about it."""

    __slots__ = ("n", "keys", "functions", "key_pos", "stem_pos", "syn_pos", "synsets", "stem_keys",
                 "phrases", "ngrams", "by_par")

    def __init__(self, infos: Sequence[WordInfo], phrases: list, ngrams: dict) -> None:
        """``phrases``: ``(start, length, paraphrase)`` for each paraphrase of each reference
        phrase in the line, in the order the jar's transducer reports them; ``ngrams``: the
        start positions of every paraphrase the line contains (at least those)
        (:mod:`.phrases`)."""
        self.n = len(infos)
        self.keys = [w.key for w in infos]
        self.stem_keys = [w.stem_key for w in infos]
        self.synsets = [w.synsets for w in infos]
        self.functions = [w.function for w in infos]
        key_pos: dict[int, list[int]] = {}
        stem_pos: dict[int, list[int]] = {}
        syn_pos: dict[int, list[int]] = {}
        for i, w in enumerate(infos):
            key_pos.setdefault(w.key, []).append(i)
            stem_pos.setdefault(w.stem_key, []).append(i)
            for s in w.synsets:
                syn_pos.setdefault(s, []).append(i)
        self.key_pos, self.stem_pos, self.syn_pos = key_pos, stem_pos, syn_pos
        self.phrases = phrases
        self.ngrams = ngrams
        by_par: dict[tuple[int, ...], list[int]] = {}
        for k, (_, _, par) in enumerate(phrases):
            by_par.setdefault(par, []).append(k)
        self.by_par = by_par  # paraphrase → indices into ``phrases``

    def where(self, words: tuple[int, ...]) -> Sequence[int]:
        if not words:  # an empty paraphrase matches at every position, as in the jar
            return range(self.n)
        return self.ngrams.get(words, ())


def candidate_matches(line1: Line, line2: Line):
    """Per reference position, the jar's list of matches; and word coverage counts."""
    n1, n2 = line1.n, line2.n
    matches: list[list[Match]] = [[] for _ in range(n2)]
    cov1 = [0] * n1
    cov2 = [0] * n2
    k1, k2 = line1.keys, line2.keys
    for j in range(n2):
        for i in line1.key_pos.get(k2[j], ()):
            matches[j].append((j, 1, i, 1, EXACT))
            cov1[i] += 1
            cov2[j] += 1
    if n1 == n2 and k1 == k2:
        return matches, cov1, cov2
    for j in range(n2):
        kj = k2[j]
        for i in line1.stem_pos.get(line2.stem_keys[j], ()):
            if k1[i] != kj:
                matches[j].append((j, 1, i, 1, STEM))
                cov1[i] += 1
                cov2[j] += 1
    syn_pos = line1.syn_pos
    if syn_pos:
        for j in range(n2):
            syn_j = line2.synsets[j]
            if not syn_j:
                continue
            hits: set[int] = set()
            for s in syn_j:
                got = syn_pos.get(s)
                if got:
                    hits.update(got)
            if hits:
                kj = k2[j]
                for i in sorted(hits):
                    if k1[i] != kj:
                        matches[j].append((j, 1, i, 1, SYNONYM))
                        cov1[i] += 1
                        cov2[j] += 1

    def add(m: Match) -> None:
        matches[m[0]].append(m)
        for k in range(m[2], m[2] + m[3]):
            cov1[k] += 1
        for k in range(m[0], m[0] + m[1]):
            cov2[k] += 1

    # Only paraphrases that occur in the other line can match; visit those phrase entries in
    # the jar's order.
    for this, other, forward in ((line2, line1, True), (line1, line2, False)):
        hits = [k for par in this.by_par.keys() & other.ngrams.keys() for k in this.by_par[par]]
        if () in this.by_par:
            hits.extend(this.by_par[()])
        hits.sort()
        for k in hits:
            at, length, words = this.phrases[k]
            n = len(words)
            for pos in other.where(words):
                add((at, length, pos, n, PARAPHRASE) if forward else (pos, n, at, length, PARAPHRASE))
    return matches, cov1, cov2


def _bits(start: int, length: int) -> int:
    return ((1 << length) - 1) << start


# A search path is a tuple (key, idx, last_end, used1, used2, chosen). The jar ranks by more
# weighted matches, then fewer chunks, then smaller distance; key packs that into one integer
# (smaller first): (-weighted * S + chunks) * S + distance. used1/used2 are bit masks; chosen
# is a linked list (match, previous) of the matches this path picked.
_S = 1 << 20  # chunks and distance stay far below this
_CHUNK = _S
_MATCH = _S * _S


_first = itemgetter(0)


def _resolve(matches: list[list[Match]], fixed: list[Match | None], used1: int, used2: int,
             weights=SEARCH_WEIGHTS, beam: int = BEAM_SIZE):
    n2 = len(matches)
    options = []  # per position: (match_start, bits1, bits2, key increment, idx, last_end, distance, match)
    for ms in matches:
        row = []
        for m in ms:
            s, ln, st1, ml, mod = m
            w = weights[mod]
            row.append((st1, _bits(st1, ml), _bits(s, ln), -(int(ml * w) + int(ln * w)) * _MATCH,
                        s + ln, st1 + ml, abs(s - st1), m))
        options.append(row)
    next_paths = [(0, 0, -1, used1, used2, None)]
    for current in range(n2 + 1):
        paths = sorted(next_paths, key=_first) if len(next_paths) > 1 else next_paths
        if len(paths) > beam:
            paths = paths[:beam]
        next_paths = []
        append = next_paths.append
        bit = 1 << current
        row = options[current] if current < n2 else ()
        for path in paths:
            key, idx, last_end, u1, u2, chosen = path
            if current == n2:
                if last_end != -1:
                    path = (key + _CHUNK, idx, last_end, u1, u2, chosen)
                append(path)
                continue
            if u2 & bit:
                if current < idx:
                    append(path)
                else:
                    m = fixed[idx]
                    if m is not None:  # a fixed match starts here
                        s, ln, st1, ml, mod = m
                        w = weights[mod]
                        key -= (int(ml * w) + int(ln * w)) * _MATCH
                        if last_end != -1 and st1 != last_end:
                            key += _CHUNK
                        append((key + abs(s - st1), s + ln, st1 + ml, u1, u2, chosen))
                continue
            for st1, b1, b2, inc, new_idx, new_end, dist, m in row:
                if u1 & b1 or u2 & b2:
                    continue
                append((key + inc + (_CHUNK if last_end != -1 and st1 != last_end else 0),
                        new_idx, new_end, u1 | b1, u2 | b2, (m, chosen)))
                key += dist  # distance goes to the parent, as the jar does
            if last_end != -1:
                key += _CHUNK
            append((key, idx + 1, -1, u1, u2, chosen))
        if not next_paths:  # the jar warns and carries on with the best path
            next_paths.append(paths[0])
    next_paths.sort(key=_first)
    return next_paths[0]


def _count_chunks(matches: Sequence[Match | None]) -> int:
    chunks = 0
    idx = 0
    last_end = -1
    n = len(matches)
    while idx < n:
        m = matches[idx]
        if m is None:
            if last_end != -1:
                chunks += 1
                last_end = -1
            idx += 1
        else:
            if last_end != -1 and m[2] != last_end:
                chunks += 1
            idx = m[0] + m[1]
            last_end = m[2] + m[3]
    if last_end != -1:
        chunks += 1
    return chunks


def align_stats(line1: Line, line2: Line) -> tuple:
    """The jar's sufficient statistics for hypothesis ``line1`` against reference ``line2``:
    ``(test_len, ref_len, test_function, ref_function, [tc, rc, tf, rf] * 4, chunks,
    test_word_matches, ref_word_matches)`` as integers (23 values)."""
    n1, n2 = line1.n, line2.n
    matches, cov1, cov2 = candidate_matches(line1, line2)
    fixed: list[Match | None] = [None] * n2
    used1 = used2 = 0
    open_choice = False
    for j in range(n2):
        ms = matches[j]
        if len(ms) == 1:
            s, ln, st1, ml, _ = m = ms[0]
            if all(cov2[k] == 1 for k in range(s, s + ln)) and all(cov1[k] == 1 for k in range(st1, st1 + ml)):
                fixed[j] = m
                used1 |= _bits(st1, ml)
                used2 |= _bits(s, ln)
                continue
        if ms:
            open_choice = True
    final = fixed
    if open_choice:
        best = _resolve(matches, fixed, used1, used2)
        final = fixed[:]
        chosen = best[5]
        while chosen is not None:
            m, chosen = chosen
            final[m[0]] = m
    # else: nothing to choose; the search would only walk the fixed matches
    fw1, fw2 = line1.functions, line2.functions
    counts = [0] * (4 * N_MODULES)  # per module: test content, ref content, test function, ref function
    for m in final:
        if m is None:
            continue
        base = 4 * m[4]
        for k in range(m[2], m[2] + m[3]):
            counts[base + (2 if fw1[k] else 0)] += 1
        for k in range(m[0], m[0] + m[1]):
            counts[base + (3 if fw2[k] else 1)] += 1
    chunks = _count_chunks(final)
    test_matches = sum(counts[0::4]) + sum(counts[2::4])
    ref_matches = sum(counts[1::4]) + sum(counts[3::4])
    return (n1, n2, sum(fw1), sum(fw2), *counts, chunks, test_matches, ref_matches)
