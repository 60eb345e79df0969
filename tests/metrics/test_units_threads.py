"""Metrics called from many threads give exactly the single-threaded numbers, and leave the
process in a state where later calls are still right (a shared n-gram table once raced; the
per-call n-gram index and its small cache replaced it)."""
from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

import capeval
from capeval import data
from capeval.metrics import _ngrams

OUTPUTS = ["bleu4", "cider_d"]


@pytest.fixture(scope="module")
def coco_systems(data_dir):
    t = data.load("tanti-coco", root=data_dir)
    names = sorted(t.systems)[:4]
    # 1,000 images keep the test at a few seconds; the race showed on far fewer.
    n = 1000
    return [t.systems[s][:n] for s in names], t.references[:n]


def _score(cands, refs):
    r = capeval.score(cands, refs, OUTPUTS)
    return r.corpus, {k: v.tolist() for k, v in r.per_caption.items()}


@pytest.fixture
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as CPython allows
    yield
    sys.setswitchinterval(old)


def test_threads_equal_single_threaded_and_leave_no_damage(coco_systems, fast_switching):
    systems, refs = coco_systems
    _ngrams.clear_cache()
    expected = [_score(c, refs) for c in systems]
    for _ in range(2):
        _ngrams.clear_cache()  # cold cache: threads build and insert indexes at once
        with ThreadPoolExecutor(8) as ex:
            got = list(ex.map(lambda c: _score(c, refs), systems * 4))
        assert got == expected * 4
    # A later single-threaded call in the same process is still right.
    assert [_score(c, refs) for c in systems] == expected


def test_index_cache_under_concurrent_use_returns_the_right_index(fast_switching):
    words = [f"w{i}" for i in range(400)]
    corpora = [[" ".join(words[i + j : i + j + 12]) for j in range(30)] for i in range(0, 300, 10)]
    _ngrams.clear_cache()

    def check(sentences):
        idx = _ngrams.index_for(sentences, [])
        # the index is the one of these sentences, whatever other threads inserted meanwhile
        assert idx.sentences == sentences
        ids = idx.e_gram[idx.e_start[0] : idx.e_start[1]]
        assert idx.gram_strings(ids)[:3] == sentences[0].split()[:3]
        return len(idx)

    with ThreadPoolExecutor(8) as ex:
        assert list(ex.map(check, corpora * 8)) == [30] * (len(corpora) * 8)
    assert len(_ngrams._CACHE) <= _ngrams._CACHE_SIZE  # bounded, even under concurrent inserts


def test_index_ids_are_exact_and_in_insertion_order():
    idx = _ngrams.NgramIndex(["a b a b a", "b a", ""])
    s0 = slice(idx.e_start[0], idx.e_start[1])
    got = list(zip(idx.gram_strings(idx.e_gram[s0]), idx.e_order[s0].tolist(), idx.e_count[s0].tolist()))
    assert got == [("a", 0, 3), ("b", 0, 2), ("a b", 1, 2), ("b a", 1, 2), ("a b a", 2, 2), ("b a b", 2, 1),
                   ("a b a b", 3, 1), ("b a b a", 3, 1)]
    # the same n-gram in two sentences has one id; the empty sentence has no entries
    s1 = slice(idx.e_start[1], idx.e_start[2])
    assert set(idx.e_gram[s1].tolist()) <= set(idx.e_gram[s0].tolist())
    assert idx.e_start[3] == idx.e_start[2]
