"""The distractor accuracy summary (capeval.stats.distractor_summary): per task, mean, worst."""
from __future__ import annotations

import numpy as np
import pytest

from capeval.data.distractor_tasks import DistractorItem
from capeval.errors import InputError
from capeval.stats import distractor_summary as D
from capeval.stats.pairwise import distractor_accuracy


# ---- accuracy summary ---------------------------------------------------------------------------

def _items(tasks):
    return [DistractorItem(t, f"i{k}", "c", "d", ("r",), 0) for k, t in enumerate(tasks)]


def test_evaluate_mean_worst_and_tie_policy():
    tasks = ["shuffle"] * 4 + ["just-person"] * 4
    correct = np.array([1, 1, 1, 0, 0.5, 0.5, 0.5, 0.5])
    distr = np.array([0, 0, 0, 1, 0.5, 0.5, 0.5, 0.2])
    half = D.evaluate(_items(tasks), correct, distr)
    assert half.per_task == {"shuffle": 75.0, "just-person": 100 * (3 * 0.5 + 1) / 4}
    assert half.mean == pytest.approx((75.0 + 62.5) / 2)
    assert (half.worst, half.worst_task) == (62.5, "just-person")
    assert half.ties == {"shuffle": 0, "just-person": 3}
    fail = D.evaluate(_items(tasks), correct, distr, tie_policy="fail")
    assert fail.per_task["just-person"] == 25.0 and fail.worst_task == "just-person"
    ref = distractor_accuracy(correct, distr, tasks, tie_policy="fail")
    assert fail.accuracy.percent() == ref.percent()
    sig = str(fail.signature(dataset="distractors"))
    assert sig.startswith("distractors|dataset:distractors|stat:acc|n:8|ties:fail|") and "version:" in sig
    # an error metric: lower is better, so the ranking flips
    err = D.evaluate(_items(tasks), correct, distr, higher_is_better=False)
    assert err.per_task["shuffle"] == 25.0


def test_evaluate_refuses_misaligned_scores():
    with pytest.raises(InputError, match="2 items but 1 correct"):
        D.evaluate(_items(["shuffle", "shuffle"]), [1.0], [0.0, 0.0])
