"""PySpiceScorer wiring: the references of a unit are merged into one graph through WordNet
synonyms (SPICE merges "car" and "automobile" into one object), and not with -noSynsets."""
from __future__ import annotations

import pytest

from tests._needs import SPICE_PY

pytestmark = pytest.mark.needs(*SPICE_PY)


def _scorer(synonyms: bool):
    from capeval.scenegraph.scorer import PySpiceScorer

    return PySpiceScorer(synonyms=synonyms)


def test_references_merge_through_synonyms():
    sc = _scorer(True)
    refs = ("a car", "a blue automobile")
    out = sc.score(["a blue car"], [list(refs)])
    tuples = sc._ref_sets[refs].tuples
    # one object "automobile/car" with attribute blue: 2 tuples, both matched
    assert len(tuples) == 2 and {frozenset(t[0][0]) for t in tuples} == {frozenset({"car", "automobile"})}
    assert out["recall"][0] == 1.0 and out["precision"][0] == 1.0 and out["all"][0] == 1.0


def test_no_synonyms_means_no_merging():
    sc = _scorer(False)
    refs = ("a car", "a blue automobile")
    out = sc.score(["a blue car"], [list(refs)])
    assert len(sc._ref_sets[refs].tuples) == 3  # (car), (automobile), (automobile, blue)
    assert out["precision"][0] == 0.5 and out["recall"][0] == pytest.approx(1 / 3)


def test_memory_kept_between_calls_is_bounded_and_changes_no_number(monkeypatch):
    """A process-wide scorer serving chunk after chunk drops its in-memory parses and graphs
    once they pass KEPT_TEXTS; the scores of every call are those of a fresh scorer."""
    from capeval.scenegraph import scorer as mod

    monkeypatch.setattr(mod, "KEPT_TEXTS", 6)
    monkeypatch.setattr(mod, "KEPT_GRAPHS", 6)
    batches = [(["a dog runs on grass", "two cats sleep"], [["a dog running", "the dog is on the grass"],
                                                            ["cats sleeping on a bed"]]),
               (["a red car parks", "a man rides a horse"], [["a red car", "a parked car"], ["a person on a horse"]]),
               (["a dog runs on grass", "a boy kicks a ball"], [["a dog running"], ["a child kicking a ball"]])]
    shared = _scorer(True)
    for cands, refs in batches:
        got = shared.score(cands, refs)
        want = _scorer(True).score(cands, refs)
        for k in want:
            assert (got[k] == want[k]).all() or ((got[k] != got[k]) == (want[k] != want[k])).all(), k
        assert len(shared.parser._cache) <= 6 + 2 * 4 and len(shared._cand_sets) + len(shared._ref_sets) <= 6 + 4
