"""Metrics called from many threads give exactly the single-threaded numbers, and leave the
process in a state where later calls are still right (the shared n-gram table once raced)."""
from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

import capeval
from capeval import data
from capeval.metrics import _units

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
    _units.reset_gram_table()
    expected = [_score(c, refs) for c in systems]
    for _ in range(2):
        _units.reset_gram_table()  # cold table: every thread interns new n-grams at once
        with ThreadPoolExecutor(8) as ex:
            got = list(ex.map(lambda c: _score(c, refs), systems * 4))
        assert got == expected * 4
    # A later single-threaded call in the same process is still right.
    assert [_score(c, refs) for c in systems] == expected


def test_gram_table_ids_unique_under_concurrent_interning(fast_switching):
    table = _units.GramTable()
    words = [f"w{i}" for i in range(400)]
    sentences = [" ".join(words[i : i + 12]) for i in range(0, 388)]
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(table.sentence_entries, sentences * 8))
    seen = {}
    for s in sentences:
        ids, _orders, _counts = table.sentence_entries(s)
        for j in ids:
            seen[j] = table.gram_string(j)
    # one string per id and one id per string
    assert len(set(seen.values())) == len(seen)
    assert all(table.gram_id(g) == j for j, g in seen.items())


def test_full_table_is_replaced_not_cleared(monkeypatch):
    _units.reset_gram_table()
    held = _units.gram_table()
    ids = held.sentence_entries("a man rides a horse")[0]
    monkeypatch.setattr(_units, "_MAX_GRAMS", 1)
    fresh = _units.gram_table()
    assert fresh is not held
    # a call still holding the old table keeps consistent ids
    assert held.sentence_entries("a man rides a horse")[0] == ids
    assert [held.gram_string(j) for j in ids[:3]] == ["a", "man", "rides"]
