"""A plan made by hand is checked where it is made (issue 41, item 12): a metric without a family,
a family computing a name it does not have, or a metric computed twice is a named error, never
a KeyError after other families ran."""
from __future__ import annotations

import pytest

import capeval
from capeval import ScoringPlan
from capeval.errors import InputError
from capeval.metrics.registry import family_for
from capeval.plan import FamilyPlan


def test_a_metric_without_its_family_is_refused_by_name():
    with pytest.raises(InputError, match="metric 'bleu4' has no family in the plan"):
        ScoringPlan(metrics=("bleu4",), families=())


def test_inconsistent_plans_are_refused_before_scoring():
    bleu, rouge = family_for("bleu4"), family_for("rouge_l")
    with pytest.raises(InputError, match="'rouge_l' does not compute 'bleu4'"):
        ScoringPlan(metrics=("bleu4",), families=(FamilyPlan(rouge, ("bleu4",), None),))
    with pytest.raises(InputError, match="'bleu1' is not among its metrics"):
        ScoringPlan(metrics=("bleu4",), families=(FamilyPlan(bleu, ("bleu4", "bleu1"), None),))
    with pytest.raises(InputError, match="computed by two families"):
        ScoringPlan(metrics=("bleu4",), families=(FamilyPlan(bleu, ("bleu4",), None),) * 2)
    with pytest.raises(InputError, match="expected output names"):
        ScoringPlan(metrics=(bleu,), families=())


def test_a_hand_made_consistent_plan_scores_as_a_built_one():
    bleu = family_for("bleu4")
    made = ScoringPlan(metrics=["bleu4"], families=[FamilyPlan(bleu, ("bleu4",), None)])
    r = capeval.score(["a dog runs"], [["a dog runs fast"]], plan=made)
    assert r.corpus == capeval.score(["a dog runs"], [["a dog runs fast"]], ["bleu4"]).corpus
    built = ScoringPlan.build(["bleu4", "cider_d", "bleu1"])
    assert built.only(["bleu1"]).metrics == ("bleu1",)
