"""A saved CIDEr df file is validated on load: nothing in it can turn scores into NaN or
silently into zeros."""
from __future__ import annotations

import json

import pytest

import capeval
from capeval.errors import InputError
from capeval.metrics.cider import DocumentFrequency

CANDS = ["a dog runs on the grass", "two cats sleep", "a man rides a red bike"]
REFS = [["a dog is running", "the dog runs on grass"], ["two cats are sleeping", "cats asleep"],
        ["a man riding a bike", "a cyclist on a red bike"]]


def _write(tmp_path, payload):
    p = tmp_path / "df.json"
    p.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    return p


@pytest.mark.parametrize("payload, match", [
    ({"format": "capeval-cider-df/1", "n_units": 0, "df": {"a": 1}}, "n_units must be an integer >= 2"),
    ({"format": "capeval-cider-df/1", "n_units": 1, "df": {"a": 1}}, "n_units must be an integer >= 2"),
    ({"format": "capeval-cider-df/1", "n_units": 2.5, "df": {"a": 1}}, "n_units must be an integer >= 2"),
    ({"format": "capeval-cider-df/1", "df": {"a": 1}}, "n_units must be an integer >= 2"),
    ({"format": "capeval-cider-df/1", "n_units": 10, "df": {"a": -1}}, "df of n-gram 'a' is -1"),
    ({"format": "capeval-cider-df/1", "n_units": 10, "df": {"a": 11}}, "df of n-gram 'a' is 11"),
    ({"format": "capeval-cider-df/1", "n_units": 10, "df": {"a": "3"}}, "df of n-gram 'a' is '3'"),
    ('{"format": "capeval-cider-df/1", "n_units": 10, "df": {"a": NaN}}', "df of n-gram 'a' is nan"),
    ('{"format": "capeval-cider-df/1", "n_units": 10, "df": {"a": Infinity}}', "df of n-gram 'a' is inf"),
    ({"format": "capeval-cider-df/1", "n_units": 10, "df": [1, 2]}, "'df' must be an object"),
    ([1, 2], "unknown format 'list'"),
])
def test_bad_df_files_are_refused(tmp_path, payload, match):
    p = _write(tmp_path, payload)
    with pytest.raises(InputError, match=match):
        DocumentFrequency.load(p)
    with pytest.raises(InputError, match=match):
        capeval.score(CANDS, REFS, ["cider_d"], options={"cider_d": {"df": str(p)}})


def test_saved_df_round_trips_to_identical_scores(tmp_path):
    p = tmp_path / "df.json"
    corpus = capeval.score(CANDS, REFS, ["cider_d"], options={"cider_d": {"save_df": str(p)}})
    again = capeval.score(CANDS, REFS, ["cider_d"], options={"cider_d": {"df": str(p)}})
    assert again.per_caption["cider_d"].tolist() == corpus.per_caption["cider_d"].tolist()
