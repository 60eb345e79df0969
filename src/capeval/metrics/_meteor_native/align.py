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
sequence (:class:`Line`), the one-word matches of a reference word once per hypothesis
(:meth:`Line.singles`); search paths are tuples whose used-word sets are bit masks, and the
weighted-count increments are precomputed per match (adding ``k * 0.5`` to an integer and
truncating adds ``int(k * 0.5)``); the search visits only positions with matches
(:func:`_resolve`; :func:`_resolve_stepwise` is the position-by-position original). A pair's
score bound (:func:`pair_bound`) lets the caller skip pairs that cannot be a unit's best.
When the optional compiled core is built (:mod:`.compiled`), :func:`pair_bound` and
:func:`pair_stats` run in C: the same matches in the same order, the bound by the same
floating-point operations, and the jar's search position by position, as
:func:`_resolve_stepwise` runs it; the Python functions here are its twins.
"""
from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter

from . import compiled
from .phrases import PhraseIndex
from .score import MODULE_WEIGHTS, upper_bound

EXACT, STEM, SYNONYM, PARAPHRASE = 0, 1, 2, 3
N_MODULES = 4
#: The aligner's own weights (MeteorScorer sets these for the search; the scoring weights
#: 1, 0.6, 0.8, 0.6 are applied later).
SEARCH_WEIGHTS = (1.0, 0.5, 0.5, 0.5)
BEAM_SIZE = 40

Match = tuple  # (start, length, match_start, match_length, module)


class Line:
    """One word sequence with everything the matchers need about it."""

    __slots__ = ("n", "words", "keys", "functions", "n_functions", "deltas", "wlen", "stem_keys", "synsets",
                 "relations", "all_relations", "occurrences", "para_ids", "phrase_index", "_ngrams",
                 "_index", "_singles", "_paraphrases", "_entries", "_packed")

    def __init__(self, words: Sequence[str], rows: Sequence[tuple], occurrences: list, para_ids: list[int],
                 phrase_index: PhraseIndex, ngrams: dict | None = None) -> None:
        """``words`` and their facts (each word's :attr:`.words.WordInfo.row`, then its
        ``core.word`` facts of the compiled core or None); ``occurrences``: ``(start, length,
        phrase)`` of each reference phrase in the line, in the order the jar's transducer
        reports them; ``para_ids``: each word's id in the paraphrase table (-1: absent);
        ``phrase_index``: the paraphrases of the batch's reference phrases
        (:class:`.phrases.PhraseIndex`, shared by the lines of a batch); ``ngrams``: the
        start positions of every paraphrase the line contains (at least those) if already at
        hand, else found when first needed."""
        self.n = len(words)
        self.words = words
        if rows:
            (self.keys, self.stem_keys, self.synsets, self.functions, self.relations, self.deltas,
             self._packed) = zip(*rows)
        else:
            self.keys = self.stem_keys = self.synsets = self.functions = self.relations = self.deltas = ()
            self._packed = ()
        self.n_functions = sum(self.functions)
        self.wlen = sum(self.deltas)
        self.all_relations = None  # their union: built when first a hypothesis
        self.occurrences = occurrences
        self.para_ids = para_ids
        self.phrase_index = phrase_index
        self._ngrams = ngrams
        self._index = None  # positions by key, stem and synset: built when first a hypothesis
        self._singles: dict[str, tuple] = {}  # reference word → its one-word matches here
        self._paraphrases = None
        self._entries: dict[tuple[int, ...], list[tuple]] = {}

    @property
    def groups(self) -> dict[tuple[int, ...], tuple]:
        return self.phrase_index.groups

    @property
    def ngrams(self) -> dict[tuple[int, ...], list[int]]:
        got = self._ngrams
        if got is None:
            core = compiled.core
            got = self._ngrams = self.phrase_index.positions(self.para_ids, None if core is None else core.positions)
        return got

    def packed(self, core) -> bytes:
        """The word facts the compiled core reads (``core.line`` of each word's
        ``core.word``), packed once."""
        got = self._packed
        if type(got) is not bytes:
            got = self._packed = core.line(tuple(got) if None not in got else
                                           tuple(core.word(*r) for r in zip(self.keys, self.stem_keys, self.synsets,
                                                                            self.functions, self.para_ids)))
        return got

    def where(self, words: tuple[int, ...]) -> Sequence[int]:
        if not words:  # an empty paraphrase matches at every position, as in the jar
            return range(self.n)
        return self.ngrams.get(words, ())

    def paraphrases(self) -> tuple[frozenset, bool]:
        """Every non-empty paraphrase of the reference phrases in the line, and whether the
        empty paraphrase is among theirs."""
        got = self._paraphrases
        if got is None:
            groups = [self.groups[g] for _, _, g in self.occurrences]
            got = self._paraphrases = (frozenset().union(*[x[1] for x in groups]), any(x[3] for x in groups))
        return got

    def entries(self, par: tuple[int, ...]) -> list[tuple]:
        """``(occurrence, index, start, length, par)`` wherever ``par`` is a paraphrase of a
        reference phrase in the line, in the jar's order (by occurrence, then table order)."""
        got = self._entries.get(par)
        if got is None:
            groups = self.groups
            got = self._entries[par] = [(o, k, at, length, par) for o, (at, length, g) in enumerate(self.occurrences)
                                        for k in groups[g][2].get(par, ())]
        return got

    def singles(self, word: str, key: int, stem_key: int, synsets: frozenset[int]) -> tuple:
        """The one-word matches of a reference word (``word`` and its facts) in this line as
        hypothesis, as ``(exact only, all modules)``; each ``(matches, ref_weight,
        hyp_weights)``: matches a tuple of ``(position, module)`` in the jar's order (exact,
        then stem, then synonym, each by position), the highest scoring weight among them
        (0.0: none), and ``(position, highest weight there)`` pairs. Memoised per word: a
        hypothesis meets the same reference words again and again."""
        if self._index is None:
            key_pos: dict[int, list[int]] = {}
            stem_pos: dict[int, list[int]] = {}
            syn_pos: dict[int, list[int]] = {}
            for i, (k, sk, syn) in enumerate(zip(self.keys, self.stem_keys, self.synsets)):
                key_pos.setdefault(k, []).append(i)
                stem_pos.setdefault(sk, []).append(i)
                for x in syn:
                    syn_pos.setdefault(x, []).append(i)
            self._index = (key_pos, stem_pos, syn_pos)
        key_pos, stem_pos, syn_pos = self._index
        k1 = self.keys
        exact = tuple((i, EXACT) for i in key_pos.get(key, ()))
        rest = [(i, STEM) for i in stem_pos.get(stem_key, ()) if k1[i] != key]
        if synsets and syn_pos:
            hits: set[int] = set()
            for x in synsets:
                got = syn_pos.get(x)
                if got:
                    hits.update(got)
            rest.extend((i, SYNONYM) for i in sorted(hits) if k1[i] != key)
        every = exact + tuple(rest)
        got = self._singles[word] = (_weighed(exact), _weighed(every))
        return got


_NO_SINGLES = (((), 0.0, ()), ((), 0.0, ()))


def _weighed(matches: tuple) -> tuple:
    best: dict[int, float] = {}
    for i, mod in matches:
        w = MODULE_WEIGHTS[mod]
        if best.get(i, 0.0) < w:
            best[i] = w
    return matches, max(best.values(), default=0.0), tuple(best.items())


def is_same(line1: Line, line2: Line) -> bool:
    """Identical word sequences (by the jar's word identity): the exact module alone aligns them."""
    return line1.n == line2.n and line1.keys == line2.keys


def paraphrase_matches(line1: Line, line2: Line) -> list[Match]:
    """The paraphrase matches of a pair (not identical sequences), in the jar's order:
    paraphrases of reference phrases found in the hypothesis, then of hypothesis phrases
    found in the reference; each reference phrase by occurrence, its paraphrases in table
    order."""
    out: list[Match] = []
    append = out.append
    for this, other, forward in ((line2, line1, True), (line1, line2, False)):
        if not this.occurrences:
            continue
        # Only paraphrases that occur in the other line can match.
        pars, has_empty = this.paraphrases()
        common = pars.intersection(other.ngrams)
        if has_empty:  # the empty paraphrase occurs everywhere
            common = {*common, ()}
        elif not common:
            continue
        if len(common) == 1:
            (only,) = common
            hits = this.entries(only)
        else:
            hits = [e for par in common for e in this.entries(par)]
            hits.sort()
        for _, _, at, length, words in hits:
            n = len(words)
            if forward:
                for pos in other.where(words):
                    append((at, length, pos, n, PARAPHRASE))
            else:
                for pos in other.where(words):
                    append((pos, n, at, length, PARAPHRASE))
    return out


def para_spec(line1: Line, line2: Line) -> tuple:
    """What the compiled core reads (with both lines' ``packed`` facts) to find a pair's
    :func:`paraphrase_matches`: it compares table ids directly, with no n-gram lookups."""
    return line2.occurrences, line1.occurrences, line1.phrase_index.packed(compiled.core)


def _singles_of(line1: Line, line2: Line, same: bool) -> list[tuple]:
    """:meth:`Line.singles` of each reference word (exact only for identical sequences)."""
    memo = line1._singles
    which = 0 if same else 1
    out = []
    j = 0
    every = line1.all_relations
    if every is None:
        every = line1.all_relations = frozenset().union(*line1.relations)
    relations = line2.relations
    for w in line2.words:
        got = memo.get(w)
        if got is None:
            if relations[j].isdisjoint(every):  # most words: nothing in common
                got = memo[w] = _NO_SINGLES
            else:
                got = line1.singles(w, line2.keys[j], line2.stem_keys[j], line2.synsets[j])
        out.append(got[which])
        j += 1
    return out


def match_weights(line1: Line, line2: Line, singles: list[tuple], para: list[Match]):
    """Per word of each line, the highest scoring weight among the candidate matches that
    cover it (0.0: no match can cover it): whatever the search picks, a word counts at most
    that much (:func:`.score.upper_bound`)."""
    w1 = [0.0] * line1.n
    w2 = [rec[1] for rec in singles]
    for rec in singles:
        for i, w in rec[2]:
            if w1[i] < w:
                w1[i] = w
    if para:
        w = MODULE_WEIGHTS[PARAPHRASE]
        for s, ln, st1, ml, _ in para:
            for k in range(s, s + ln):
                if w2[k] < w:
                    w2[k] = w
            for k in range(st1, st1 + ml):
                if w1[k] < w:
                    w1[k] = w
    return w1, w2


def pair_bound(line1: Line, line2: Line) -> tuple[float, object]:
    """:func:`.score.upper_bound` of a pair's score, and what :func:`pair_stats` aligns the
    pair from: compiled, the packed candidate matches; in Python, the pair's
    :func:`_singles_of` and :func:`paraphrase_matches`."""
    same = is_same(line1, line2)
    core = compiled.core
    if core is not None and line1.n <= compiled.MAX_WORDS and line2.n <= compiled.MAX_WORDS:
        return core.pair_bound(line1.packed(core), line2.packed(core), para_spec(line1, line2), same)
    para = [] if same else paraphrase_matches(line1, line2)
    singles = _singles_of(line1, line2, same)
    w1, w2 = match_weights(line1, line2, singles, para)
    return upper_bound(w1, line1.deltas, w2, line2.deltas, line1.wlen, line2.wlen), (singles, para)


def pair_stats(line1: Line, line2: Line, found) -> tuple:
    """:func:`align_stats` of a pair from what :func:`pair_bound` gave with its bound."""
    if isinstance(found, bytes):
        return compiled.core.align_packed(line1.packed(compiled.core), line2.packed(compiled.core), found,
                                          SEARCH_WEIGHTS, BEAM_SIZE)
    return align_stats(line1, line2, candidate_matches(line1, line2, *found))


def candidate_matches(line1: Line, line2: Line, singles: list[tuple] | None = None,
                      para: list[Match] | None = None):
    """Per reference position, the jar's list of matches; and word coverage counts.
    ``singles``, ``para``: :func:`_singles_of` and :func:`paraphrase_matches` of the pair,
    if already at hand."""
    same = is_same(line1, line2)
    if singles is None:
        singles = _singles_of(line1, line2, same)
    if para is None:
        para = [] if same else paraphrase_matches(line1, line2)
    matches: list[list[Match]] = []
    cov1 = [0] * line1.n
    cov2 = [0] * line2.n
    j = 0
    for rec in singles:
        got = rec[0]
        if got:
            matches.append([(j, 1, i, 1, mod) for i, mod in got])
            for i, _ in got:
                cov1[i] += 1
            cov2[j] = len(got)
        else:
            matches.append([])
        j += 1
    for m in para:
        matches[m[0]].append(m)
        for k in range(m[2], m[2] + m[3]):
            cov1[k] += 1
        for k in range(m[0], m[0] + m[1]):
            cov2[k] += 1
    return matches, cov1, cov2


def _bits(start: int, length: int) -> int:
    return ((1 << length) - 1) << start


# A search path is a tuple (key, idx, last_end, used, chosen). The jar ranks by more weighted
# matches, then fewer chunks, then smaller distance; key packs that into one integer (smaller
# first): (-weighted * S + chunks) * S + distance. used is a bit mask of the hypothesis words
# (low n1 bits) and the reference words (above them) in matches; chosen is a linked list
# (match, previous) of the matches this path picked.
_S = 1 << 20  # chunks and distance stay far below this
_CHUNK = _S
_MATCH = _S * _S


_first = itemgetter(0)
_first_two = itemgetter(0, 1)


def _match_row(ms: list[Match], weights, n1: int) -> list[tuple]:
    """What taking each match of one reference position adds to a path: (its first reference
    word, its position bits, its key increment, the path's new index and chunk end, the
    distance its parent pays, the match)."""
    row = []
    for m in ms:
        s, ln, st1, ml, mod = m
        w = weights[mod]
        row.append((st1, _bits(st1, ml) | _bits(s + n1, ln), -(int(ml * w) + int(ln * w)) * _MATCH,
                    s + ln, st1 + ml, abs(s - st1), m))
    return row


def _resolve(matches: list[list[Match]], fixed: list[Match | None], n1: int, used: int,
             weights=SEARCH_WEIGHTS, beam: int = BEAM_SIZE):
    """The jar's beam search (:func:`_resolve_stepwise`), visiting only the reference positions
    with matches.

    At a position without matches (a gap) a path either sits inside a match it chose (it is
    carried unchanged) or skips the position: its chunk is closed (one more chunk if it was
    open) and nothing else changes. So a run of gaps changes each path's key at most once,
    no path is added, and the beam is already cut to size on entering the run; the jar's
    per-position re-sorts within the run only reorder paths whose keys become equal, which
    :func:`_catch_up` reproduces in one sort. Anything outside those conditions (the jar's
    "no path left" fallback, a path dropped in a gap) hands the search to
    :func:`_resolve_stepwise`, which equals the jar step for step.
    """
    n2 = len(matches)
    chunk = _CHUNK
    paths = [(0, 0, -1, used, None)]
    prev = -1
    for current in [j for j in range(n2) if matches[j]] + [n2]:
        if len(paths) > 1:
            paths.sort(key=_first)
            if len(paths) > beam:
                del paths[beam:]
        if current > prev + 1:
            for path in paths:
                if path[1] < current:  # some path skips gaps: catch up
                    paths = _catch_up(paths, current, n1)
                    if paths is None:
                        return None
                    break
        prev = current
        if current == n2:  # the end closes every open chunk
            paths = [(p[0] + chunk, *p[1:]) if p[2] != -1 else p for p in paths]
            break
        next_paths = []
        append = next_paths.append
        bit = 1 << (current + n1)
        m = fixed[current]
        if m is not None:  # every path either sits inside a chosen match or takes this one
            s, ln, st1, ml, mod = m
            w = weights[mod]
            shift = abs(s - st1) - (int(ml * w) + int(ln * w)) * _MATCH
            new_idx, new_end = s + ln, st1 + ml
            for path in paths:
                key, idx, last_end, u, chosen = path
                if u & bit and idx == current:
                    if last_end != -1 and st1 != last_end:
                        key += chunk
                    append((key + shift, new_idx, new_end, u, chosen))
                elif u & bit and current < idx:
                    append(path)
                else:
                    _step(path, current, bit, matches, fixed, weights, n1, append)
        else:
            row = _match_row(matches[current], weights, n1)
            for path in paths:
                key, idx, last_end, u, chosen = path
                if u & bit:
                    if current < idx:
                        append(path)
                    else:
                        _step(path, current, bit, matches, fixed, weights, n1, append)
                    continue
                for st1, b, inc, new_idx, new_end, dist, m in row:
                    if u & b:
                        continue
                    append((key + inc + (chunk if last_end != -1 and st1 != last_end else 0),
                            new_idx, new_end, u | b, (m, chosen)))
                    key += dist  # distance goes to the parent, as the jar does
                if last_end != -1:
                    key += chunk
                append((key, idx + 1, -1, u, chosen))
        if not next_paths:  # the jar's fallback: left to the step-by-step search
            return None
        paths = next_paths
    paths.sort(key=_first)
    return paths[0]


def _step(path: tuple, current: int, bit: int, matches, fixed, weights, n1: int, append) -> None:
    """One path through reference position ``current``, every case as the jar has it (the
    search's loops handle the usual cases inline)."""
    key, idx, last_end, u, chosen = path
    if u & bit:
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
                append((key + abs(s - st1), s + ln, st1 + ml, u, chosen))
        return
    for m in matches[current]:
        s, ln, st1, ml, mod = m
        b = _bits(st1, ml) | _bits(s + n1, ln)
        if u & b:
            continue
        w = weights[mod]
        append((key - (int(ml * w) + int(ln * w)) * _MATCH + (_CHUNK if last_end != -1 and st1 != last_end else 0),
                s + ln, st1 + ml, u | b, (m, chosen)))
        key += abs(s - st1)
    if last_end != -1:
        key += _CHUNK
    append((key, idx + 1, -1, u, chosen))


def _catch_up(paths: list, current: int, n1: int) -> list | None:
    """``paths`` (sorted, cut to the beam) moved through the gap positions before
    ``current``, in the order the jar's per-position stable sorts leave them; None when a
    path would be dropped in a gap (the step-by-step search then decides).

    A path at ``idx < current`` skips the gaps ``idx .. current - 1``; if its chunk is open,
    its key grows by one chunk at ``idx``. Among paths whose keys end up equal, a path whose
    key grew comes before one whose key did not (its key was smaller in between), a later
    growth before an earlier one (likewise), and otherwise the previous order stands."""
    out = []
    changed = False
    for path in paths:
        idx = path[1]
        if idx >= current:  # inside a chosen or fixed match all along
            out.append((path[0], 0, path))
            continue
        key, idx, last_end, u, chosen = path
        if (u >> (n1 + idx)) & ((1 << (current - idx)) - 1):
            return None  # a used reference word where the path stands: dropped
        if last_end != -1:
            key += _CHUNK
            changed = True
            out.append((key, -1 - idx, (key, current, -1, u, chosen)))
        else:
            out.append((key, 0, (key, current, -1, u, chosen)))
    if changed:
        out.sort(key=_first_two)
    return [x[2] for x in out]


def _resolve_stepwise(matches: list[list[Match]], fixed: list[Match | None], used1: int, used2: int,
             weights=SEARCH_WEIGHTS, beam: int = BEAM_SIZE):
    """The search exactly as the jar runs it, one reference position at a time: the
    specification :func:`_resolve` is tested against, and its fallback."""
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


def align_stats(line1: Line, line2: Line, candidates=None) -> tuple:
    """The jar's sufficient statistics for hypothesis ``line1`` against reference ``line2``:
    ``(test_len, ref_len, test_function, ref_function, [tc, rc, tf, rf] * 4, chunks,
    test_word_matches, ref_word_matches)`` as integers (23 values). ``candidates``: what
    :func:`candidate_matches` gives for the pair, if already at hand."""
    n1, n2 = line1.n, line2.n
    matches, cov1, cov2 = candidate_matches(line1, line2) if candidates is None else candidates
    fixed: list[Match | None] = [None] * n2
    used1 = used2 = 0
    open_choice = False
    for j, ms in enumerate(matches):
        if not ms:
            continue
        if len(ms) == 1:
            s, ln, st1, ml, _ = m = ms[0]
            if ((cov2[s] == 1 if ln == 1 else all(cov2[k] == 1 for k in range(s, s + ln)))
                    and (cov1[st1] == 1 if ml == 1 else all(cov1[k] == 1 for k in range(st1, st1 + ml)))):
                fixed[j] = m
                used1 |= _bits(st1, ml)
                used2 |= _bits(s, ln)
                continue
        open_choice = True
    final = fixed
    if open_choice:
        best = _resolve(matches, fixed, n1, used1 | (used2 << n1))
        chosen = best[4] if best is not None else _resolve_stepwise(matches, fixed, used1, used2)[5]
        final = fixed[:]
        while chosen is not None:
            m, chosen = chosen
            final[m[0]] = m
    # else: nothing to choose; the search would only walk the fixed matches
    fw1, fw2 = line1.functions, line2.functions
    counts = [0] * (4 * N_MODULES)  # per module: test content, ref content, test function, ref function
    for m in final:
        if m is None:
            continue
        s, ln, st1, ml, mod = m
        base = 4 * mod
        if ml == 1:
            counts[base + (2 if fw1[st1] else 0)] += 1
        else:
            for k in range(st1, st1 + ml):
                counts[base + (2 if fw1[k] else 0)] += 1
        if ln == 1:
            counts[base + (3 if fw2[s] else 1)] += 1
        else:
            for k in range(s, s + ln):
                counts[base + (3 if fw2[k] else 1)] += 1
    chunks = _count_chunks(final)
    test_matches = sum(counts[0::4]) + sum(counts[2::4])
    ref_matches = sum(counts[1::4]) + sum(counts[3::4])
    return (n1, n2, line1.n_functions, line2.n_functions, *counts, chunks, test_matches, ref_matches)
