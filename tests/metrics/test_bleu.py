"""BLEU (coco variant): the corpus score comes from summed statistics, per-caption scores are
each caption scored alone, and both equal pycocoevalcap's (the oracle runs in the test).
Oracle checks over random corpora shared with ROUGE-L and CIDEr-D are in test_ngram_oracles.py."""
from __future__ import annotations

import numpy as np
import pytest

import capeval
from capeval.metrics.bleu import BleuCoco, BleuStats, bleu_from_stats, closest_reflen

from ._coco_oracle import CANDS, REFS, coco_scores


def test_equals_pycocoevalcap():
    ours = BleuCoco().compute(CANDS, REFS)
    ref = coco_scores(CANDS, REFS)
    for k in range(1, 5):
        assert ours.corpus[f"bleu{k}"] == ref[f"bleu{k}"][0]
        np.testing.assert_array_equal(ours.per_caption[f"bleu{k}"], ref[f"bleu{k}"][1])


def test_corpus_is_from_summed_statistics_not_the_mean():
    whole = BleuCoco().compute(CANDS, REFS)
    rows = [BleuCoco().compute([c], [r]) for c, r in zip(CANDS, REFS)]
    total = BleuStats(sum(r.details["testlen"] for r in rows), sum(r.details["reflen"] for r in rows),
                      tuple(sum(r.details["guess"][k] for r in rows) for k in range(4)),
                      tuple(sum(r.details["correct"][k] for r in rows) for k in range(4)))
    assert [whole.corpus[f"bleu{k}"] for k in range(1, 5)] == bleu_from_stats(total, 4)
    # each row alone is that row's per-caption score
    for i, r in enumerate(rows):
        assert [r.corpus[f"bleu{k}"] for k in range(1, 5)] == [whole.per_caption[f"bleu{k}"][i] for k in range(1, 5)]
    assert whole.corpus["bleu4"] != pytest.approx(float(np.mean(whole.per_caption["bleu4"])), rel=1e-6)


def test_closest_reference_length_prefers_the_shorter_on_a_tie():
    assert closest_reflen([4, 6], 5) == 4
    assert closest_reflen([6, 4], 5) == 4
    assert closest_reflen([3, 9], 8) == 9


def test_identical_caption_and_signature():
    res = capeval.score(["a dog runs on the grass"], [["a dog runs on the grass"]], ["bleu1", "bleu4"])
    assert res.per_caption["bleu1"][0] == pytest.approx(1.0, abs=1e-9)
    assert res.per_caption["bleu4"][0] == pytest.approx(1.0, abs=1e-9)
    sig = res.signatures["bleu4"]
    assert sig.startswith("bleu_coco|out:bleu4|") and "corpus:summed-stats" in sig and "nrefs:1" in sig


def test_only_n_4():
    with pytest.raises(ValueError, match="n=4"):
        BleuCoco(n=3)
