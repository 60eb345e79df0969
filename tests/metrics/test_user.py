"""What a user metric may return (issue 33, item 9): an ordered container of real numbers, one per
candidate. A dict would be scored by its keys and a set in hash order, so both are refused,
naming the type, as is everything else that is not a sequence or a 1-D array of reals."""
from __future__ import annotations

import numpy as np
import pytest

import capeval
from capeval.errors import InputError
from capeval.metrics.user import from_callable

C = ["a dog runs", "two cats", "a bird"]
R = [["a dog runs fast"], ["two cats sleep"], ["a bird sings"]]


def _score(returned):
    def returns(candidates, references, images):
        return returned
    return capeval.score(C, R, [from_callable(returns, "returns")]).per_caption["returns"]


@pytest.mark.parametrize("returned,match", [
    ({0: 1.0, 1: 2.0, 2: 3.0}, "returned a dict"),
    ({1.0, 2.0, 3.0}, "returned a set"),
    (frozenset({1.0, 2.0, 3.0}), "returned a frozenset"),
    ((x for x in (1.0, 2.0, 3.0)), "returned a generator"),
    ("123", "returned a str"),
    (3.0, "returned a float"),
    (None, "returned a NoneType"),
    (np.zeros((3, 1)), r"shape \(3, 1\)"),
    (np.array(["1", "2", "3"]), "expected real numbers"),
    ([1.0, 2.0], "2 scores for 3 candidates"),
    ([1.0, 2.0, True], r"candidate 2 is True \(bool\)"),
    ([1.0, 2.0, 1j], r"candidate 2 is 1j \(complex\)"),
    ([1.0, 2.0, "3"], r"candidate 2 is '3' \(str\)"),
    ([1.0, 2.0, float("nan")], "must be finite"),
    ([1.0, 2.0, 10 ** 400], "must be finite"),
])
def test_refused_returns_name_the_type(returned, match):
    with pytest.raises(InputError, match=match):
        _score(returned)


@pytest.mark.parametrize("returned", [[1, 2.0, 3], (1.0, 2.0, 3.0), np.array([1, 2, 3]),
                                      np.array([1, 2, 3], dtype=np.float32), [np.int64(1), np.float16(2), 3]])
def test_sequences_and_arrays_of_reals_are_read_in_order(returned):
    assert _score(returned).tolist() == [1.0, 2.0, 3.0]


def test_a_callable_raising_system_exit_is_an_error_not_an_exit():
    def exits(candidates, references, images):
        raise SystemExit(0)
    with pytest.raises(InputError, match=r"'exits' \(user metric\) raised SystemExit\(0\) while scoring"):
        capeval.score(C, R, [from_callable(exits)])
