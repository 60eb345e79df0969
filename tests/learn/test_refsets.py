import hashlib

import numpy as np
import pytest

from capeval.errors import InputError
from capeval.learn.features import Feature, extract
from capeval.learn.refsets import describe, expand, unit_refsets

REFS48 = [f"a picture of thing number {i} on a table" for i in range(48)]


def _by_hash(refs):
    return sorted(refs, key=lambda r: hashlib.sha256(r.encode()).hexdigest())


def test_cap_takes_the_smallest_hashes_whatever_the_order():
    rng = np.random.default_rng(1)
    (unit,) = unit_refsets(REFS48, "cap", 4)
    assert sorted(unit) == sorted(_by_hash(REFS48)[:4])
    assert unit == [r for r in REFS48 if r in unit]  # input order kept inside the unit
    for _ in range(5):
        shuffled = list(rng.permutation(REFS48))
        assert sorted(unit_refsets(shuffled, "cap", 4)[0]) == sorted(unit)


def test_groups_are_disjoint_full_groups_in_hash_order():
    groups = unit_refsets(REFS48[:11], "groups", 4)
    assert [len(g) for g in groups] == [4, 4]  # 11 // 4 groups, the 3 left-overs dropped
    flat = [r for g in groups for r in g]
    assert len(set(flat)) == 8 and set(flat) == set(_by_hash(REFS48[:11])[:8])
    assert len(unit_refsets(REFS48, "groups", 4)) == 12


def test_few_references_are_one_unchanged_unit():
    refs = ["b c", "a b", "c d"]
    for policy in ("all", "cap", "groups"):
        assert unit_refsets(refs, policy, 4) == [refs]
    assert unit_refsets(refs, "per-ref", 4) == [["b c"], ["a b"], ["c d"]]


def test_bad_policy_and_empty_references_are_named():
    with pytest.raises(InputError, match="unknown reference policy 'most'"):
        unit_refsets(["a"], "most")
    with pytest.raises(InputError, match="candidate 1"):
        expand(["x", "y"], [["a"], []], "per-ref")


def test_pool_averages_the_units_of_each_candidate():
    ex = expand(["x", "y"], [["a", "b", "c"], ["d"]], "per-ref")
    assert ex.candidates == ["x", "x", "x", "y"] and ex.owner.tolist() == [0, 0, 0, 1]
    np.testing.assert_allclose(ex.pool(np.array([[1.0], [2.0], [6.0], [5.0]])), [[3.0], [5.0]])


def test_extract_under_a_policy_equals_scoring_the_units():
    cands = ["a picture of thing number 3 and 17 and 40", "thing on a table"]
    refs = [REFS48, REFS48[:20]]
    feats = (Feature("bleu1"), Feature("bleu4"), Feature("rouge_l"))
    capped = extract(cands, refs, feats, refs="cap")
    direct = extract(cands, [unit_refsets(r, "cap")[0] for r in refs], feats)
    np.testing.assert_array_equal(capped.X, direct.X)
    grouped = extract(cands, refs, feats, refs="groups")
    ex = expand(cands, refs, "groups")
    per_unit = extract(ex.candidates, ex.references, feats).X
    np.testing.assert_allclose(grouped.X, [per_unit[ex.owner == i].mean(axis=0) for i in range(2)])
    # against all 48 references BLEU-1 finds every number; against 4 it cannot (why policies exist)
    assert extract(cands, refs, feats).X[0, 0] > capped.X[0, 0]
    assert extract(cands, refs, feats, refs="all").X.tolist() == extract(cands, refs, feats).X.tolist()


def test_describe_names_the_policy():
    assert describe("cap", 4) == "cap4-sha256" and describe("per-ref") == "per-ref-mean"
