"""``-D ref_mode=each-mean``: each reference scored separately, then the mean per row (QACE App. A)."""
import numpy as np
import pytest

import capeval
from capeval.metaeval.runner import run_benchmark
from capeval.service.scoring import score_units, score_units_each_ref
from capeval.errors import InputError


def test_each_mean_on_a_hand_computed_example():
    # "a dog runs" vs "a dog runs": BLEU-1 = 1; vs "a cat sits": 1 of 3 unigrams, same length -> 1/3.
    cands = ["a dog runs"]
    refs = [["a dog runs", "a cat sits"]]
    each = score_units_each_ref(cands, refs, ["bleu1", "rouge_l"], tokenizer="none")
    assert each.per_caption["bleu1"][0] == pytest.approx((1 + 1 / 3) / 2)
    # ROUGE-L vs the second reference: LCS 1, P = R = 1/3 -> F = 1/3.
    assert each.per_caption["rouge_l"][0] == pytest.approx((1 + 1 / 3) / 2)
    # The multi-reference set gives the best match instead.
    assert score_units(cands, refs, ["bleu1"], tokenizer="none").per_caption["bleu1"][0] == pytest.approx(1.0)


def test_each_mean_equals_one_corpus_call_per_reference_position(toy_data):
    # The coco scorers run once per reference position j (the rows' j-th references), so CIDEr-D's
    # df comes from N references per call, as when per-reference baselines are produced.
    table = toy_data["toy-corr"]
    res = run_benchmark("toy-corr", ["bleu4", "cider_d"], load_options={"ref_mode": "each-mean"},
                        cache=capeval.service.cache.ScoreCache(enabled=False))
    k = len(table.references[0])  # toy rows all have 3 references
    assert all(len(r) == k for r in table.references)
    per_position = [capeval.score(list(table.candidates), [[rs[j]] for rs in table.references], ["bleu4", "cider_d"])
                    for j in range(k)]
    for m in ("bleu4", "cider_d"):
        expect = np.mean([p.per_caption[m] for p in per_position], axis=0)
        np.testing.assert_allclose(res.scores[m], expect, rtol=0, atol=1e-12)
    # One corpus over all N*K pairs would pool the df: a different CIDEr-D.
    flat_c = [c for c, rs in zip(table.candidates, table.references) for _ in rs]
    flat_r = [[r] for rs in table.references for r in rs]
    pooled = capeval.score(flat_c, flat_r, ["cider_d"]).per_caption["cider_d"].reshape(-1, k).mean(axis=1)
    assert not np.allclose(pooled, res.scores["cider_d"])
    assert "ref_mode:each-mean" in str(res.signature())
    plain = run_benchmark("toy-corr", ["cider_d"], cache=capeval.service.cache.ScoreCache(enabled=False))
    assert "ref_mode" not in str(plain.signature())
    assert not np.allclose(plain.scores["cider_d"], res.scores["cider_d"])


def test_each_mean_pairwise_names_the_mode(toy_data):
    res = run_benchmark("toy-pairs", ["bleu1"], load_options={"ref_mode": "each-mean"},
                        cache=capeval.service.cache.ScoreCache(enabled=False))
    assert "ref_mode:each-mean" in str(res.signature())


def test_undefined_outputs_average_over_defined_references():
    from capeval.service import scoring

    # Position 0: both rows undefined; position 1: row 0 defined, row 1 undefined.
    calls = iter([np.array([np.nan, np.nan]), np.array([0.5, np.nan])])

    def fake(cands, refs, metrics, **kw):
        v = next(calls)
        assert len(v) == len(cands)
        return capeval.result.Result({"m": 0.5}, {"m": v}, {"m": "sig"}, len(v), details={"cached": {"m": False}})

    orig = scoring.score_units
    scoring.score_units = fake
    try:
        out = score_units_each_ref(["x", "y"], [["r1", "r2"], ["r3", "r4"]], ["m"])
    finally:
        scoring.score_units = orig
    assert out.per_caption["m"][0] == 0.5 and np.isnan(out.per_caption["m"][1])


def test_bad_modes_are_refused(toy_data):
    with pytest.raises(InputError, match="ref_mode"):
        run_benchmark("toy-corr", ["bleu1"], load_options={"ref_mode": "each-max"})
    with pytest.raises(InputError, match="system"):
        run_benchmark("toy-sys", ["bleu1"], load_options={"ref_mode": "each-mean"})
    with pytest.raises(InputError, match="no reference"):
        score_units_each_ref(["a b"], [[]], ["bleu1"])
