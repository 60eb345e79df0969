"""SPICE-style scoring of aligned candidates and reference lists with the Python parser."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..dedup import dedupe
from .graph import CATEGORIES, SceneGraph, TupleSet, evaluate
from .lexicon import CachedWordNet
from .parser import DEFAULT_MODEL, TupleParser, can_fork
from .parsestore import DiskStore, default_directory
from .synonyms import no_synsets


class PySpiceScorer:
    """Parses with spaCy, builds SPICE scene graphs, matches with WordNet synonyms.

    One instance keeps its parse and graph caches, so scoring several tables reuses them.
    """

    def __init__(self, model: str = DEFAULT_MODEL, synonyms: bool = True, wordnet=None,
                 wordnet_path=None, batch_size: int = 512, n_process: int = 1,
                 synset_fn: Callable[[str], frozenset] | None = None,
                 parse_cache: bool | str | Path = True):
        self.synonyms = synonyms
        store_dir = None if parse_cache is False or parse_cache is None else (
            default_directory() if parse_cache is True else Path(parse_cache))
        # What the lemma repair consults, as part of the parse store's key (None: unknown, so
        # parses are not stored).
        repair: str | None = "none"
        is_verb = known = None
        self.lexicon: CachedWordNet | None = None
        if synset_fn is None:
            if wordnet is None:
                from ..resources.wordnet import prepare_nltk_data

                repair = f"wordnet:{prepare_nltk_data(wordnet_path).name}"  # resolves; loads nothing
                store = None if store_dir is None else DiskStore(store_dir, {"kind": "wordnet-facts", "wordnet": repair})
                self.lexicon = CachedWordNet(wordnet_path, store=store)
            else:
                self.lexicon = CachedWordNet(wordnet=wordnet)
                repair = None
            synset_fn = self.lexicon.synsets
        elif wordnet is not None:
            from .lemmas import wordnet_known_test, wordnet_verb_test

            is_verb, known = wordnet_verb_test(wordnet), wordnet_known_test(wordnet)
            repair = None
        # Graph merging uses synsets only in synonym mode (SPICE's -noSynsets turns both off).
        self._synsets = synset_fn if synonyms else no_synsets
        self.parser = TupleParser(model, is_verb=is_verb, batch_size=batch_size, n_process=n_process,
                                  known=known, lexicon=self.lexicon)
        if store_dir is not None and repair is not None:
            self.parser.store = DiskStore(store_dir, {"kind": "spacy-parses", **self.parser.identity(),
                                                      "lemma_repair": repair})
        self._cand_sets: dict[str, TupleSet] = {}
        self._ref_sets: dict[tuple[str, ...], TupleSet] = {}
        self.stats: dict[str, float] = {}

    def _graph(self, tuple_lists) -> TupleSet:
        g = SceneGraph(self._synsets, merge_similar=self.synonyms)
        for tuples in tuple_lists:
            for t in tuples:
                g.add(t)
        return TupleSet(g)

    def _bound_memory(self) -> None:
        """Drop the parses and graphs kept in memory once they pass :data:`KEPT_TEXTS` texts
        and :data:`KEPT_GRAPHS` graphs: a process-wide scorer serving a streamed run chunk
        after chunk would otherwise grow with every distinct caption (measured: about 23 KB per
        row). They are caches of pure functions of the text, so no number changes; the disk
        store keeps the parses."""
        if len(self.parser._cache) > KEPT_TEXTS:
            self.parser.clear_cache()
        if len(self._cand_sets) + len(self._ref_sets) > KEPT_GRAPHS:
            self._cand_sets, self._ref_sets = {}, {}

    def _unit_evaluations(self, candidates: Sequence[str], references: Sequence[Sequence[str]]):
        """The distinct units and :func:`evaluate`'s result for each."""
        self._bound_memory()
        units = dedupe(candidates, references)
        flat_refs = [r for refs in units.refsets for r in refs]
        texts = units.cands + flat_refs
        pairs = [(units.cands[ci], units.refsets[ri])
                 for ci, ri in zip(units.unit_cand.tolist(), units.unit_refset.tolist())]
        n_process = self.parser.n_process
        early = None
        if n_process > 1 and len(pairs) >= FORK_MIN_UNITS and can_fork():
            # Units whose texts are all parsed already are matched in a forked process while
            # this one loads spaCy and parses the others.
            known = self.parser.known(texts)
            ready = [i for i, (c, refs) in enumerate(pairs) if c in known and all(r in known for r in refs)]
            if 0 < len(ready) < len(pairs):
                self._read_lexicon()
                early = (ready, _EarlyMatch(self, [pairs[i] for i in ready], known))
        try:
            parses = dict(zip(texts, self.parser.parse(texts)))
            todo = range(len(pairs)) if early is None else sorted(set(range(len(pairs))) - set(early[0]))
            rest = [pairs[i] for i in todo]
            if n_process > 1 and len(rest) >= FORK_MIN_UNITS and can_fork():
                evs_rest = self._evaluate_forked(rest, parses, n_process)
            else:
                evs_rest = [self._evaluate(c, refs, parses) for c, refs in rest]
        except BaseException:
            if early is not None:
                early[1].stop()
            raise
        if early is None:
            evs = evs_rest
        else:
            evs = [None] * len(pairs)
            for i, ev in zip(todo, evs_rest):
                evs[i] = ev
            early_evs, facts = early[1].result()
            for i, ev in zip(early[0], early_evs):
                evs[i] = ev
            if self.lexicon is not None:
                self.lexicon.add(facts)
        if self.lexicon is not None:
            self.lexicon.flush()
        return units, evs

    def _read_lexicon(self) -> None:
        # Before forking: a forked process cannot read the store (its connection is the
        # parent's), so it would ask WordNet for every word the store already answers.
        if self.lexicon is not None:
            self.lexicon.size()

    def _evaluate(self, cand: str, refs: tuple[str, ...], parses: dict) -> dict:
        cs = self._cand_sets.get(cand)
        if cs is None:
            cs = self._cand_sets[cand] = self._graph([parses[cand]])
        rs = self._ref_sets.get(refs)
        if rs is None:
            # The references of a unit form one merged graph, parsed caption by caption.
            rs = self._ref_sets[refs] = self._graph(parses[r] for r in refs)
        return evaluate(cs, rs, self.synonyms)

    def _evaluate_forked(self, pairs, parses: dict, n_process: int) -> list[dict]:
        """Graphs and matching of contiguous slices of the units on ``n_process`` forked
        workers (each unit's result depends on that unit alone); the workers' new WordNet
        answers come back to this process's lexicon. The graphs stay in the workers."""
        import multiprocessing

        global _FORKED
        step = -(-len(pairs) // (4 * n_process))
        chunks = [pairs[i:i + step] for i in range(0, len(pairs), step)]
        out: list[dict] = []
        self._read_lexicon()
        with _fork_lock:  # one forked evaluation at a time: the workers find it in a global
            _FORKED = (self, parses)
            try:
                with multiprocessing.get_context("fork").Pool(n_process, initializer=_forked_init) as pool:
                    for evs, facts in pool.imap(_forked_chunk, chunks):
                        out.extend(evs)
                        if self.lexicon is not None:
                            self.lexicon.add(facts)
            finally:
                _FORKED = None
        return out

    def evaluations(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> list[dict]:
        """Per row, :func:`evaluate`'s counts and scores by category (rows of one unit share a dict)."""
        units, evs = self._unit_evaluations(candidates, references)
        return [evs[u] for u in units.row_unit.tolist()]

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> dict[str, np.ndarray]:
        """Per-row arrays: ``f`` for "all" and each category, plus ``pr``/``re`` of "all"."""
        start = time.perf_counter()
        parsed_before, secs_before = self.parser.parsed, self.parser.parse_seconds
        hits_before = self.parser.store_hits
        units, evs = self._unit_evaluations(candidates, references)
        keys = ("all",) + CATEGORIES
        per_unit = {k: np.empty(len(units.unit_cand)) for k in keys}
        pr = np.empty(len(units.unit_cand))
        re = np.empty(len(units.unit_cand))
        for u, ev in enumerate(evs):
            for k in keys:
                per_unit[k][u] = ev[k]["f"]
            pr[u], re[u] = ev["all"]["pr"], ev["all"]["re"]
        out = {k: v[units.row_unit] for k, v in per_unit.items()}
        out["precision"] = pr[units.row_unit]
        out["recall"] = re[units.row_unit]
        parsed = self.parser.parsed - parsed_before
        parse_s = self.parser.parse_seconds - secs_before
        self.stats = {
            "rows": float(len(candidates)),
            "distinct_sentences_parsed": float(parsed),
            "parse_seconds": parse_s,
            "parse_captions_per_s": parsed / parse_s if parse_s > 0 else float("nan"),
            "parse_cache_hits": float(self.parser.store_hits - hits_before),
            "wordnet_loaded": float(self.lexicon is not None and self.lexicon.loaded_wordnet),
            "total_seconds": time.perf_counter() - start,
        }
        return out


class _EarlyMatch:
    """:meth:`PySpiceScorer._evaluate` of ``pairs`` in one forked process, started at once;
    ``result()`` -> (their evaluations, the new WordNet answers). A bare process and pipe (no
    pool), so that this process keeps a single thread: spaCy's torch-free import, done later,
    needs that."""

    def __init__(self, scorer: PySpiceScorer, pairs, parses: dict):
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        self._recv, send = ctx.Pipe(duplex=False)
        self._proc = ctx.Process(target=_early_main, args=(scorer, pairs, parses, send), daemon=True)
        self._proc.start()
        send.close()  # the child's end only: reading then ends when the child does

    def stop(self) -> None:
        self._proc.terminate()
        self._proc.join()
        self._recv.close()

    def result(self) -> tuple[list[dict], dict]:
        try:
            status, payload = self._recv.recv()
        except EOFError:
            status, payload = "error", f"the process died (exit code {self._proc.exitcode})"
        finally:
            self._recv.close()
            self._proc.join()
        if status != "ok":
            raise RuntimeError(f"SPICE-py: matching in a forked process failed: {payload}")
        return payload


def _early_main(scorer: PySpiceScorer, pairs, parses: dict, send) -> None:
    try:
        if scorer.lexicon is not None:
            scorer.lexicon.after_fork()
            scorer.lexicon.take_new()  # the parent's pending answers are the parent's to write
        evs = [scorer._evaluate(c, refs, parses) for c, refs in pairs]
        out = ("ok", (evs, scorer.lexicon.take_new() if scorer.lexicon is not None else {}))
    except BaseException:  # noqa: BLE001  # reported to the parent, which raises
        import traceback

        out = ("error", traceback.format_exc())
    send.send(out)
    send.close()


#: Fewer distinct units than this are matched in-process even with ``n_process`` > 1.
FORK_MIN_UNITS = 2000
#: Texts (parses, or candidate and reference-set graphs) a scorer keeps in memory between calls
#: before dropping them: some 100 MB, more than one benchmark's distinct captions.
KEPT_TEXTS = 50_000
#: Candidate and reference-set graphs kept between calls (a reference set's graph merges all its
#: captions with their synsets: some 10 KB each, measured on a streamed run).
KEPT_GRAPHS = 10_000
_FORKED: tuple[PySpiceScorer, dict] | None = None
_fork_lock = threading.Lock()


def _forked_init() -> None:
    scorer = _FORKED[0] if _FORKED is not None else None
    if scorer is not None and scorer.lexicon is not None:
        scorer.lexicon.after_fork()


def _forked_chunk(pairs) -> tuple[list[dict], dict]:
    assert _FORKED is not None, "the scorer is set before the workers fork"
    scorer, parses = _FORKED
    if scorer.lexicon is not None:
        scorer.lexicon.take_new()  # the parent's pending answers are the parent's to write
    evs = [scorer._evaluate(c, refs, parses) for c, refs in pairs]
    return evs, scorer.lexicon.take_new() if scorer.lexicon is not None else {}
