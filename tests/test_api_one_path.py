"""``capeval.score`` makes every number one way (issue 44): the family's pre-pass over the scored
rows, an instance built with that state, its statistics, the scores of its Aggregate. The same
steps a streamed chunk takes, so the in-memory numbers are the streamed ones by construction."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import capeval
from capeval.errors import InputError
from capeval.metrics.base import Metric, OutputInfo
from capeval.metrics.registry import register_user
from capeval.metrics.statistics import AsComputed, Statistics

CANDS = ["a dog runs on the grass", "a cat sleeps", "two birds on a wire"]
REFS = [["a dog is running on grass", "the dog runs"], ["a cat is sleeping", "cat asleep on a bed"],
        ["birds sitting on a wire", "two small birds"]]


class Words:
    """A pre-pass state: words counted over the references, merged with ``+``."""

    def __init__(self, n: int):
        self.n = n

    def __add__(self, other: Words) -> Words:
        return Words(self.n + other.n)


class ShareOfWords(Metric):
    """A caption's words over all reference words of the input (needs the whole input)."""

    family = variant = "share_of_words"
    outputs = (OutputInfo("share_of_words", "share_of_words", "share_of_words", (0.0, math.inf)),)
    cache_resources = ()
    cacheable = False
    text_input = "raw"
    prepasses: list[int] = []
    built_with: list[int | None] = []

    def __init__(self, words: Words | None = None):
        self.words = words
        ShareOfWords.built_with.append(None if words is None else words.n)

    def prepass(self, candidates, references):
        if self.words is not None:
            return None
        ShareOfWords.prepasses.append(len(candidates))
        return Words(sum(len(r.split()) for refs in references for r in refs))

    @classmethod
    def prepass_options(cls, state):
        return {"words": state}

    def compute(self, candidates, references):
        if self.words is None:
            raise AssertionError("scored without the pre-pass state")
        per = np.array([len(c.split()) / self.words.n for c in candidates])
        return capeval.result.MetricScores({"share_of_words": float(np.mean(per))}, {"share_of_words": per},
                                           {"words": self.words.n})


class MedianLength(Metric):
    """Corpus = the median caption length, not the mean: refused unless it never streams."""

    family = variant = "median_length"
    outputs = (OutputInfo("median_length", "median_length", "median_length", (0.0, math.inf)),)
    cache_resources = ()
    cacheable = False
    text_input = "raw"

    def compute(self, candidates, references):
        per = np.array([float(len(c.split())) for c in candidates])
        return capeval.result.MetricScores({"median_length": float(np.median(per))}, {"median_length": per}, {})


class WholeMedianLength(MedianLength):
    family = variant = "whole_median_length"
    outputs = (OutputInfo("whole_median_length", "whole_median_length", "whole_median_length", (0.0, math.inf)),)
    streamable = False

    def compute(self, candidates, references):
        out = super().compute(candidates, references)
        return capeval.result.MetricScores({"whole_median_length": out.corpus["median_length"]},
                                           {"whole_median_length": out.per_caption["median_length"]}, {},
                                           {"note": "whole input"})


register_user(ShareOfWords)
register_user(MedianLength)
register_user(WholeMedianLength)


def test_the_framework_runs_the_prepass_over_the_scored_rows_and_builds_the_family_with_it():
    ShareOfWords.prepasses.clear()
    ShareOfWords.built_with.clear()
    res = capeval.score(CANDS, REFS, metrics=["share_of_words"])
    total = sum(len(r.split()) for refs in REFS for r in refs)
    assert ShareOfWords.prepasses == [3]  # once, over every row
    assert ShareOfWords.built_with == [None, total]  # then built with the state
    assert res.per_caption["share_of_words"].tolist() == [len(c.split()) / total for c in CANDS]
    assert f"words:{total}" in res.signatures["share_of_words"]


def test_a_streamed_run_gives_the_in_memory_numbers_of_a_prepass_family(tmp_path):
    rows = [{"candidate": c, "references": r} for c, r in zip(CANDS, REFS)]
    streamed = capeval.score_stream(rows, ["share_of_words"], chunk_size=1, run_dir=tmp_path / "run")
    memory = capeval.score(CANDS, REFS, metrics=["share_of_words"])
    assert streamed.per_caption["share_of_words"].tolist() == memory.per_caption["share_of_words"].tolist()
    assert streamed.corpus == memory.corpus and streamed.signatures == memory.signatures


def test_score_statistics_returns_the_statistics_the_scores_came_from():
    res, stats = capeval.api.score_statistics(CANDS, REFS, plan=capeval.ScoringPlan.build(["ter", "bleu4"]))
    for fam in ("ter", "bleu"):
        assert isinstance(stats[fam], Statistics)
    assert stats["ter"].scores().corpus["ter"] == res.corpus["ter"]
    # the batch's details ride on its statistics and reach the Result, never a run folder
    assert set(res.details["ter"]) >= {"edits", "ref_length", "sentence_edits", "distinct_units"}
    assert stats["ter"].reduced().details == {}


def test_a_streamable_family_whose_corpus_is_not_the_mean_is_refused_in_memory_too():
    with pytest.raises(InputError, match="median_length.*not the mean"):
        capeval.score(CANDS, REFS, metrics=["median_length"])


def test_a_family_that_never_streams_keeps_the_corpus_it_computed():
    res = capeval.score(CANDS, REFS, metrics=["whole_median_length"])
    assert res.corpus["whole_median_length"] == 5.0  # lengths 6, 3, 5: the median, not the mean
    assert res.details["whole_median_length"] == {"note": "whole input"}
    # its statistics describe one whole input: two parts never merge
    _, stats = capeval.api.score_statistics(CANDS, REFS, plan=capeval.ScoringPlan.build(["whole_median_length"]))
    st = stats["whole_median_length"]
    assert isinstance(st.aggregate, AsComputed)
    same_corpus = Statistics(3, AsComputed(dict(res.corpus)), {k: v.copy() for k, v in st.rows.items()})
    with pytest.raises(ValueError, match="different rules"):
        Statistics.merge([st, same_corpus])


@pytest.mark.parametrize("metric", ["cider_d", "cider", "spider"])
def test_cider_with_df_from_one_scored_unit_is_refused_in_memory_and_streamed(metric, tmp_path):
    with pytest.raises(InputError, match="1 unit gives ln"):
        capeval.score(CANDS[:1], REFS[:1], metrics=[metric])
    rows = tmp_path / "one.jsonl"
    rows.write_text(json.dumps({"candidate": CANDS[0], "references": REFS[0]}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="1 unit gives ln"):
        capeval.score_stream(rows, [metric], run_dir=tmp_path / "run")
