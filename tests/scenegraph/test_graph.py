"""Scene-graph merging, tuple matching and SPICE's F-score rules (no parser, no WordNet)."""
from __future__ import annotations

import math

import pytest

from capeval.scenegraph.graph import (
    Counts,
    SceneGraph,
    TupleSet,
    category_of,
    evaluate,
    matched,
)
from capeval.scenegraph.synonyms import no_synsets, table_synsets

# A tiny lexicon: blue~azure share a synset; car~automobile share one; red has its own.
LEX = table_synsets({
    "blue": {"blue.a"}, "azure": {"blue.a"}, "red": {"red.a"},
    "car": {"car.n"}, "automobile": {"car.n"}, "dog": {"dog.n"}, "cat": {"cat.n"},
    "on": set(), "street": {"street.n"}, "bus": {"bus.n"},
})


def graph(tuples, synsets=LEX, merge=True):
    return SceneGraph.from_tuples(tuples, synsets, merge)


def test_spice_unit_test_bus_example():
    # SPICE's own TupleSet unit test: duplicates merge, so all 5 candidate tuples match.
    cand = graph([("bus",), ("bus", "red"), ("bus", "on", "street"), ("bus", "double-decker"),
                  ("street",), ("bus",), ("bus", "double-decker"), ("bus", "on", "street"), ("bus",)])
    ref = graph([("bus",), ("bus", "red"), ("bus", "double-decker"), ("street",), ("bus", "on", "street")])
    ct, rt = TupleSet(cand).tuples, TupleSet(ref).tuples
    assert len(ct) == 5
    assert sum(matched(ct, rt, synonyms=False)) == 5
    assert sum(matched(ct, rt, synonyms=True)) == 5


def test_synonym_nodes_merge_and_match():
    g = graph([("car",), ("automobile", "blue")])
    assert g.readable() == [("automobile/car",), ("automobile/car", "blue")]
    cand = graph([("automobile", "azure")])
    ev = evaluate(cand, g)
    # cand tuples: (automobile), (automobile, azure): both match through shared synsets
    assert ev["all"]["tp"] == 2 and ev["all"]["f"] == 1.0
    exact = evaluate(graph([("automobile", "azure")], no_synsets, False),
                     graph([("car",), ("automobile", "blue")], no_synsets, False), synonyms=False)
    assert exact["all"]["tp"] == 1  # only (automobile) is identical


def test_different_words_do_not_match():
    ev = evaluate(graph([("dog", "red")]), graph([("cat", "red")]))
    assert ev["all"]["tp"] == 0 and ev["all"]["f"] == 0.0


def test_relation_requires_all_three_elements():
    ref = graph([("dog", "on", "street")])
    assert evaluate(graph([("dog", "on", "street")]), ref)["relation"]["f"] == 1.0
    assert evaluate(graph([("cat", "on", "street")]), ref)["relation"]["tp"] == 0


def test_copula_is_dropped_from_relations():
    g = graph([("dog", "be on", "street")])
    assert ("dog", "on", "street") in g.readable()


def test_f_score_formula():
    cand = graph([("dog",), ("dog", "red"), ("cat",)])
    ref = graph([("dog",), ("dog", "blue"), ("street",), ("bus",)])
    ev = evaluate(cand, ref)["all"]
    pr, re = 1 / 3, 1 / 4
    assert ev["pr"] == pr and ev["re"] == re
    assert ev["f"] == pytest.approx(2 * pr * re / (pr + re), rel=0, abs=1e-15)


def test_empty_graphs():
    empty = graph([])
    some = graph([("dog",)])
    for c, r in ((empty, empty), (empty, some), (some, empty)):
        ev = evaluate(c, r)
        assert ev["all"]["f"] == 0.0  # "All" is never NaN
    # refs with no tuples at all: every category is NaN
    ev = evaluate(some, empty)
    for cat in ("object", "attribute", "relation", "color", "count", "size"):
        assert math.isnan(ev[cat]["f"])


def test_category_nan_only_when_references_lack_it():
    ref = graph([("dog",), ("dog", "red")])
    ev = evaluate(graph([("dog",)]), ref)
    assert math.isnan(ev["relation"]["f"]) and math.isnan(ev["count"]["f"]) and math.isnan(ev["size"]["f"])
    assert ev["color"]["f"] == 0.0  # refs have a colour, the candidate has none
    assert ev["object"]["f"] == 1.0


def test_categories():
    def t(*words):
        return tuple((frozenset([w]), frozenset()) for w in words)

    assert category_of(t("dog")) == {"object"}
    assert category_of(t("dog", "on", "grass")) == {"relation"}
    assert category_of(t("dog", "two")) == {"attribute", "count"}
    assert category_of(t("dog", "black")) == {"attribute", "color"}
    assert category_of(t("dog", "small")) == {"attribute", "size"}
    assert category_of(t("dog", "happy")) == {"attribute"}
    merged = ((frozenset(["dog"]), frozenset()), (frozenset(["black", "dark"]), frozenset()))
    assert category_of(merged) == {"attribute"}  # SPICE compares the joined label


def test_color_category_matches_within_category_only():
    cand = graph([("car", "blue")])
    ref = graph([("automobile", "azure")])
    ev = evaluate(cand, ref)
    assert ev["attribute"]["tp"] == 1
    assert math.isnan(ev["color"]["f"])  # "azure" is not in SPICE's colour list


def test_recall_is_tp_over_reference_size_even_when_reused():
    # Two candidate tuples may match the same reference tuple, as in SPICE.
    counts = Counts(tp=3, n_cand=3, n_ref=2)
    f, pr, re = counts.f_score(allow_nan=False)
    assert pr == 1.0 and re == 1.5 and f == pytest.approx(1.2)


def test_matched_index_agrees_with_full_scan():
    ref = TupleSet(graph([("dog", "red"), ("car", "blue"), ("dog", "on", "street"), ("cat",)])).tuples
    cand = TupleSet(graph([("automobile", "azure"), ("dog", "blue"), ("cat",), ("dog", "on", "bus")])).tuples

    def scan(c):
        return any(len(c) == len(r) and all(not (a[0].isdisjoint(b[0]) and a[1].isdisjoint(b[1]))
                                            for a, b in zip(c, r)) for r in ref)

    assert matched(cand, ref) == [scan(c) for c in cand]


def test_bad_tuple_length():
    with pytest.raises(ValueError, match="1-3 elements"):
        graph([("a", "b", "c", "d")])
