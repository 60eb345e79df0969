"""Averaging and reference reductions of the QACE pipeline, with stand-in components."""
import numpy as np
import pytest

from capeval.errors import InputError
from capeval.qace.pipeline import QacePipeline
from capeval.qace.types import Answer, Question


class FakeQG:
    def __init__(self, table):
        self.table = table

    def generate(self, cands):
        return [self.table[c] for c in cands]


class FakeQA:
    """Answers from a dict keyed by (question text, context)."""

    def __init__(self, table):
        self.table = table
        self.seen = []

    def answer(self, items):
        self.seen.extend(items)
        return [Answer(*self.table.get((q.text, c), ("", 0.0))) for q, c in items]


def fake_bs(pairs):
    # a deterministic, answer-dependent similarity: 1 for equal, 0.3 otherwise, 0 for empty
    return np.array([0.0 if not b else (1.0 if a == b else 0.3) for a, b in pairs])


Q1 = Question("what runs?", "dog", "entity", "a dog", ("exists",))
Q2 = Question("what color is the dog?", "black", "attribute", "a black dog", ("attribute", "dog", "color"))


def _pipe():
    qg = FakeQG({"c": [Q1, Q2], "empty": []})
    qa = FakeQA({
        (Q1.text, ("r1",)): ("dog", 1.0), (Q2.text, ("r1",)): ("brown", 1.0),
        (Q1.text, ("r2",)): ("dog", 1.0),  # Q2 unanswerable on r2
        (Q1.text, ("r1", "r2")): ("dog", 1.0), (Q2.text, ("r1", "r2")): ("black", 0.9),
    })
    return QacePipeline(qg, qa, fake_bs), qa


def test_mean_reduction_per_reference_then_mean():
    pipe, _ = _pipe()
    out = pipe.run(["c"], [["r1", "r2"]], "mean")
    # r1: F1 (1, 0) -> .5; BS (1, .3) -> .65; ans (1, 1) -> 1; qace (0.5+0.75+1)/3
    # r2: F1 (1, 0) -> .5; BS (1, 0) -> .5; ans (1, 0) -> .5; qace .5
    r1, r2 = (0.5 + 0.65 + 1) / 3, 0.5
    assert out.scores["qace"][0] == pytest.approx((r1 + r2) / 2)
    assert out.scores["f1"][0] == pytest.approx(0.5)
    assert out.scores["bertscore"][0] == pytest.approx(0.575)
    assert out.scores["answerability"][0] == pytest.approx(0.75)


def test_max_and_merged_reductions():
    pipe, qa = _pipe()
    out = pipe.run(["c"], [["r1", "r2"]], "max")
    assert out.scores["qace"][0] == pytest.approx((0.5 + 0.65 + 1) / 3)
    assert out.scores["answerability"][0] == pytest.approx(1.0)
    out = pipe.run(["c"], [["r1", "r2"]], "merged")
    assert ((Q1, ("r1", "r2"))) in qa.seen
    assert out.scores["qace"][0] == pytest.approx((1.0 + 1.0 + 0.95) / 3)


def test_explanation_rows_and_flags():
    pipe, _ = _pipe()
    exp = pipe.run(["c"], [["r1", "r2"]], "mean").explanations[0]
    assert [r.question for r in exp.rows] == [Q1.text, Q2.text]
    assert exp.rows[1].answers == ["brown", ""]
    assert exp.rows[1].answerability == [1.0, 0.0]
    assert [r.flagged for r in exp.rows] == [False, True]
    assert exp.flagged()[0].candidate_answer == "black"
    d = exp.to_dict()
    assert d["rows"][1]["flagged"] is True and d["scores"]["qace"] == exp.scores["qace"]
    assert "<unanswerable>" in exp.table()


def test_no_questions_scores_zero():
    pipe, _ = _pipe()
    out = pipe.run(["empty", "c"], [["r1"], ["r1"]], "mean")
    assert out.scores["qace"][0] == 0.0 and out.scores["qace"][1] > 0
    assert out.explanations[0].rows == []


def test_bad_input_is_refused():
    pipe, _ = _pipe()
    with pytest.raises(InputError, match="reduction"):
        pipe.run(["c"], [["r1"]], "median")
    with pytest.raises(InputError, match="1 candidates but 2"):
        pipe.run(["c"], [["r1"], ["r2"]], "mean")
