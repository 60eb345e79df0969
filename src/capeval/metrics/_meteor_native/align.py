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
"""
from __future__ import annotations

from collections.abc import Sequence

from .words import WordInfo

EXACT, STEM, SYNONYM, PARAPHRASE = 0, 1, 2, 3
N_MODULES = 4
#: The aligner's own weights (MeteorScorer sets these for the search; the scoring weights
#: 1, 0.6, 0.8, 0.6 are applied later).
SEARCH_WEIGHTS = (1.0, 0.5, 0.5, 0.5)
BEAM_SIZE = 40

Match = tuple  # (start, length, match_start, match_length, module)


class _Path:
    __slots__ = ("matches", "m1", "m2", "chunks", "idx", "last_end", "distance", "used1", "used2")

    def copy(self) -> "_Path":
        p = _Path.__new__(_Path)
        p.matches = self.matches[:]
        p.m1 = self.m1
        p.m2 = self.m2
        p.chunks = self.chunks
        p.idx = self.idx
        p.last_end = self.last_end
        p.distance = self.distance
        p.used1 = self.used1[:]
        p.used2 = self.used2[:]
        return p


def _rank(p: _Path) -> tuple[int, int, int]:
    return (-(p.m1 + p.m2), p.chunks, p.distance)


def _paraphrase_matches(p1: Sequence[int], p2: Sequence[int], table: dict, max_len: int,
                        add) -> None:
    n1, n2 = len(p1), len(p2)

    def paths(line: Sequence[int], start: int):
        n = len(line)
        for length in range(1, min(max_len, n - start) + 1):
            word = line[start + length - 1]
            if word < 0:
                return  # not in the table's vocabulary: no phrase continues through it
            pars = table.get(tuple(line[start : start + length]))
            if pars:
                for par in pars:
                    yield length, par

    for j in range(n2):
        for length, words in paths(p2, j):
            k = len(words)
            for i in range(n1):
                if i + k <= n1 and tuple(p1[i : i + k]) == words:
                    add((j, length, i, k, PARAPHRASE))
    for i in range(n1):
        for length, words in paths(p1, i):
            k = len(words)
            for j in range(n2):
                if j + k <= n2 and tuple(p2[j : j + k]) == words:
                    add((j, k, i, length, PARAPHRASE))


def candidate_matches(w1: Sequence[WordInfo], w2: Sequence[WordInfo], para_table: dict, para_max: int):
    """Per reference position, the jar's list of matches; and word coverage counts."""
    n1, n2 = len(w1), len(w2)
    matches: list[list[Match]] = [[] for _ in range(n2)]
    cov1 = [0] * n1
    cov2 = [0] * n2

    def add(m: Match) -> None:
        matches[m[0]].append(m)
        for k in range(m[3]):
            cov1[m[2] + k] += 1
        for k in range(m[1]):
            cov2[m[0] + k] += 1

    k1 = [w.key for w in w1]
    k2 = [w.key for w in w2]
    for j in range(n2):
        kj = k2[j]
        for i in range(n1):
            if k1[i] == kj:
                add((j, 1, i, 1, EXACT))
    if n1 == n2 and k1 == k2:
        return matches, cov1, cov2
    s1 = [w.stem_key for w in w1]
    for j in range(n2):
        sj, kj = w2[j].stem_key, k2[j]
        for i in range(n1):
            if s1[i] == sj and k1[i] != kj:
                add((j, 1, i, 1, STEM))
    syn1 = [w.synsets for w in w1]
    for j in range(n2):
        syn_j, kj = w2[j].synsets, k2[j]
        if not syn_j:
            continue
        for i in range(n1):
            if k1[i] != kj and not syn_j.isdisjoint(syn1[i]):
                add((j, 1, i, 1, SYNONYM))
    if para_table:
        _paraphrase_matches([w.para for w in w1], [w.para for w in w2], para_table, para_max, add)
    return matches, cov1, cov2


def _resolve(matches: list[list[Match]], start: _Path, weights=SEARCH_WEIGHTS, beam: int = BEAM_SIZE) -> _Path:
    n2 = len(matches)
    next_paths = [start]
    for current in range(n2 + 1):
        paths = sorted(next_paths, key=_rank)
        next_paths = []
        for path in paths[:beam]:
            if current == n2:
                if path.last_end != -1:
                    path.chunks += 1
                next_paths.append(path)
                continue
            if path.used2[current]:
                if current < path.idx:
                    next_paths.append(path)
                else:
                    m = path.matches[path.idx]
                    if m is not None:  # a fixed match starts here
                        w = weights[m[4]]
                        path.m1 = int(path.m1 + m[3] * w)
                        path.m2 = int(path.m2 + m[1] * w)
                        if path.last_end != -1 and m[2] != path.last_end:
                            path.chunks += 1
                        path.idx = m[0] + m[1]
                        path.last_end = m[2] + m[3]
                        path.distance += abs(m[0] - m[2])
                        next_paths.append(path)
                continue
            used1, used2 = path.used1, path.used2
            for m in matches[current]:
                s, ln, ms, ml = m[0], m[1], m[2], m[3]
                if any(used2[s : s + ln]) or any(used1[ms : ms + ml]):
                    continue
                new = path.copy()
                for k in range(s, s + ln):
                    new.used2[k] = True
                for k in range(ms, ms + ml):
                    new.used1[k] = True
                new.matches[current] = m
                w = weights[m[4]]
                new.m1 = int(new.m1 + ml * w)
                new.m2 = int(new.m2 + ln * w)
                if new.last_end != -1 and ms != new.last_end:
                    new.chunks += 1
                new.idx = s + ln
                new.last_end = ms + ml
                path.distance += abs(s - ms)  # the parent's, as the jar does
                next_paths.append(new)
            if path.last_end != -1:
                path.chunks += 1
                path.last_end = -1
            path.idx += 1
            next_paths.append(path)
        if not next_paths:  # the jar warns and carries on with the best path
            next_paths.append(paths[0])
    next_paths.sort(key=_rank)
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


def align_stats(w1: Sequence[WordInfo], w2: Sequence[WordInfo], para_table: dict, para_max: int) -> tuple:
    """The jar's sufficient statistics for hypothesis ``w1`` against reference ``w2``:
    ``(test_len, ref_len, test_function, ref_function, [tc, rc, tf, rf] * 4, chunks,
    test_word_matches, ref_word_matches)`` as integers (23 values)."""
    n1, n2 = len(w1), len(w2)
    matches, cov1, cov2 = candidate_matches(w1, w2, para_table, para_max)
    start = _Path.__new__(_Path)
    start.matches = [None] * n2
    start.m1 = start.m2 = start.chunks = start.idx = start.distance = 0
    start.last_end = -1
    start.used1 = [False] * n1
    start.used2 = [False] * n2
    for j in range(n2):
        if len(matches[j]) == 1:
            s, ln, ms, ml, _ = m = matches[j][0]
            if all(cov2[k] == 1 for k in range(s, s + ln)) and all(cov1[k] == 1 for k in range(ms, ms + ml)):
                start.matches[j] = m
                for k in range(s, s + ln):
                    start.used2[k] = True
                for k in range(ms, ms + ml):
                    start.used1[k] = True
    best = _resolve(matches, start)
    fw1 = [w.function for w in w1]
    fw2 = [w.function for w in w2]
    counts = [0] * (4 * N_MODULES)  # per module: test content, ref content, test function, ref function
    for m in best.matches:
        if m is None:
            continue
        base = 4 * m[4]
        for k in range(m[2], m[2] + m[3]):
            counts[base + (2 if fw1[k] else 0)] += 1
        for k in range(m[0], m[0] + m[1]):
            counts[base + (3 if fw2[k] else 1)] += 1
    chunks = _count_chunks(best.matches)
    test_matches = sum(counts[0::4]) + sum(counts[2::4])
    ref_matches = sum(counts[1::4]) + sum(counts[3::4])
    return (n1, n2, sum(fw1), sum(fw2), *counts, chunks, test_matches, ref_matches)
