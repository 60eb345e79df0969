"""The learned ranker: pairwise fits, monotone weights, model files, leave-one-out bookkeeping."""
from __future__ import annotations

import numpy as np
import pytest

from capeval.data import CorrelationTable
from capeval.errors import InputError
from capeval.learn import lobo, ranker
from capeval.learn.features import Feature
from capeval.learn.judgments import Judgments, overlap_mask
from capeval.learn.ranker_model import RankerModel


def _rating_block(name, n_images=40, per_image=4, seed=0, noise=0.1):
    """Feature 0 predicts the rating, feature 1 is anti-correlated noise, feature 2 is noise."""
    rng = np.random.default_rng(seed)
    n = n_images * per_image
    quality = rng.normal(size=n)
    X = np.column_stack([quality + noise * rng.normal(size=n), -0.3 * quality + rng.normal(size=n),
                         rng.normal(size=n)])
    ratings = np.digitize(quality, [-0.5, 0.0, 0.5]).astype(float) + 1
    images = [f"{name}-img{i // per_image}" for i in range(n)]
    table = CorrelationTable(name, [f"{name} caption {i}" for i in range(n)], [["a ref"]] * n, ratings, images,
                             "kendall_tau_c", {"dataset": name})
    j = Judgments(name, "rating", list(table.candidates), [["a ref"]] * n, images, ratings=ratings, table=table,
                  unit_of_row=np.arange(n))
    return lobo.Block(j, X)


FEATS = (Feature("bleu1"), Feature("rouge_l"), Feature("length"))


def test_linear_ranker_learns_the_predictive_feature_and_keeps_metric_weights_non_negative():
    b = _rating_block("a")
    model = lobo.train("linear", [b], FEATS, monotone=True)
    w = model.params[0]
    assert w[0] > 0.5 and w[1] >= 0.0  # rouge_l is anti-correlated: monotone keeps it at >= 0
    free = lobo.train("linear", [b], FEATS, monotone=False).params[0]
    assert free[1] < 0  # without the constraint it would be used negatively
    s = model.predict(b.X)
    r = b.judgments.ratings
    assert np.corrcoef(s, r)[0, 1] > 0.8


def test_comparisons_only_pair_different_ratings_and_weigh_benchmarks_equally():
    a, b = _rating_block("a", n_images=10), _rating_block("b", n_images=80, seed=1)
    ca = ranker.comparisons(a.judgments)
    r = a.judgments.ratings
    assert np.all(r[ca.ia] != r[ca.ib])
    assert np.all(ca.target == (r[ca.ia] > r[ca.ib]))
    ts = ranker.stack([("a", a.X, ca), ("b", b.X, ranker.comparisons(b.judgments))])
    na = len(ca)
    assert ts.pairs.weight[:na].sum() == pytest.approx(0.5) and ts.pairs.weight[na:].sum() == pytest.approx(0.5)


def test_model_file_roundtrip_predicts_identically_and_records_provenance(tmp_path):
    blocks = [_rating_block("a"), _rating_block("b", seed=3)]
    for kind in ("linear", "pairwise_ls", "mlp"):
        m = lobo.train(kind, blocks, FEATS, hyper={"epochs": 2} if kind == "mlp" else None,
                       meta={"name": "t", "selected_on": ["b"]})
        sha = m.save(tmp_path / f"{kind}.npz")
        back = RankerModel.load(tmp_path / f"{kind}.npz")
        assert back.sha256 == sha and back.kind == kind
        assert back.trained_on == ["a", "b"] and back.selected_on == ["b"]
        X = np.vstack([b.X for b in blocks]) * 3  # far outside the range: clipped, never extrapolated
        np.testing.assert_array_equal(back.predict(X), m.predict(X))
        assert back.clipped_fraction(X) > 0
        assert m.save(tmp_path / f"{kind}-again.npz") == sha  # same model, same bytes


def test_model_file_of_another_format_is_refused(tmp_path):
    from capeval.learn.model_files import save_npz

    save_npz(tmp_path / "x.npz", {"a": np.zeros(2)}, {"format": "something-else"})
    with pytest.raises(InputError, match="format"):
        RankerModel.load(tmp_path / "x.npz")


def test_leave_one_out_never_trains_on_the_held_out_benchmark_or_its_images():
    a, b = _rating_block("a"), _rating_block("b", seed=5)
    # c shares its first images with a
    c = _rating_block("c", seed=7)
    c.judgments.images[:8] = a.judgments.images[:8]
    recs = lobo.leave_one_out({"a": a, "b": b, "c": c}, FEATS, ["linear"], n_resamples=20)
    by = {r["held_out"]: r for r in recs}
    assert by["a"]["trained_on"] == ["b", "c"] and by["a"]["dropped_overlap"] == {"b": 0, "c": 8}
    assert by["c"]["dropped_overlap"]["a"] == 8
    for r in recs:
        assert r["held_out"] not in r["trained_on"]
        assert {"value", "delta_vs_best", "vs_best"} <= set(r["models"]["linear"])
    assert overlap_mask(c.judgments, [a.judgments]).sum() == 8


def test_unknown_kind_and_mismatched_features_are_named_errors():
    b = _rating_block("a")
    with pytest.raises(InputError, match="kind"):
        lobo.train("forest", [b], FEATS)
    with pytest.raises(InputError, match="feature matrix"):
        lobo.train("linear", [b], FEATS[:2])


def test_feature_spec_reads_family_options_and_round_trips_through_labels():
    from capeval.learn import ranker_features as rf
    from capeval.learn.features import label

    feats = rf.parse("bleu1+sentsim_centroid(model=mpnet),wmd(norm=True;vectors=glove)")
    assert feats == (Feature("bleu1"), Feature("sentsim_centroid", (("model", "mpnet"),)),
                     Feature("wmd", (("norm", "True"), ("vectors", "glove"))))
    assert rf.parse([label(feats[1])]) == (feats[1],)
    with pytest.raises(InputError, match="key=value"):
        rf.parse("sentsim_max(mpnet)")
    from capeval.errors import UnknownMetricError

    with pytest.raises(UnknownMetricError, match="no_such_metric"):
        rf.parse("no_such_metric(model=x)")


def test_nested_selection_picks_the_recipe_on_training_benchmarks_only():
    blocks = {n: _rating_block(n, seed=s) for n, s in (("a", 0), ("b", 5), ("c", 7), ("d", 9))}
    good = lobo.Recipe("good", FEATS)
    noise = lobo.Recipe("noise", FEATS[1:])
    recs = lobo.nested_leave_one_out(blocks, FEATS, [noise, good], n_resamples=20)
    for r in recs:
        assert r["models"]["nested"]["recipe"] == "good"
        assert set(r["inner_selection"]["good"]) == {*r["trained_on"], "mean"}
        assert r["held_out"] not in r["inner_selection"]["good"]
    # Scrambling the held-out benchmark's labels changes its number, never the choice made for it.
    scrambled = dict(blocks)
    j = blocks["a"].judgments
    ratings = np.random.default_rng(1).permutation(j.ratings)
    table = CorrelationTable("a", list(j.candidates), [["a ref"]] * len(j), ratings, list(j.images),
                             "kendall_tau_c", {"dataset": "a"})
    scrambled["a"] = lobo.Block(Judgments("a", "rating", list(j.candidates), j.references, list(j.images),
                                          ratings=ratings, table=table, unit_of_row=np.arange(len(j))),
                                blocks["a"].X)
    before = {r["held_out"]: r for r in recs}["a"]
    after = {r["held_out"]: r for r in lobo.nested_leave_one_out(scrambled, FEATS, [noise, good],
                                                                 n_resamples=20)}["a"]
    assert after["inner_selection"] == before["inner_selection"]
    assert after["models"]["nested"]["value"] != before["models"]["nested"]["value"]
    with pytest.raises(InputError, match="not among"):
        lobo.nested_leave_one_out(blocks, FEATS[:2], [good])


def test_a_subset_block_keeps_the_rows_of_its_units_for_evaluation():
    b = _rating_block("a")
    s = b.X[:, 0]
    assert lobo.headline(b.subset(np.ones(len(b.judgments), bool)).judgments, s) == lobo.headline(b.judgments, s)
    keep = np.arange(len(b.judgments)) % 3 != 0
    sub = b.subset(keep)
    assert len(sub.judgments.table.human) == keep.sum()
    np.testing.assert_array_equal(sub.judgments.table.human[sub.judgments.unit_of_row.argsort()],
                                  b.judgments.ratings[keep])
    assert lobo.headline(sub.judgments, s[keep]) != lobo.headline(b.judgments, s)


def _training_only_block(n=60, seed=3):
    """A ``distractors-train``-shaped source: candidate a always beats b, and feature 2 says so."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2 * n, 3))
    X[:n, 2] += 2.0
    pairs = np.column_stack([np.arange(n), np.arange(n, 2 * n)])
    j = Judgments("distractors-train", "preference", [f"d{i}" for i in range(2 * n)], [["a ref"]] * (2 * n),
                  [f"dimg{i % n}" for i in range(2 * n)], pairs=pairs, labels=np.zeros(n))
    return lobo.Block(j, X)


def test_training_only_sources_are_never_held_out_and_only_reach_recipes_that_ask_for_them():
    blocks = {n: _rating_block(n, seed=s) for n, s in (("a", 0), ("b", 5), ("c", 7))}
    blocks["distractors-train"] = _training_only_block()
    plain = lobo.Recipe("plain", FEATS)
    with_d = lobo.Recipe("with-distractors", FEATS, extra_training=("distractors-train",))
    recs = lobo.nested_leave_one_out(blocks, FEATS, [with_d, plain], n_resamples=10)
    assert [r["held_out"] for r in recs] == ["a", "b", "c"]
    for r in recs:
        assert "distractors-train" not in r["inner_selection"]["plain"]
        chosen = r["models"]["nested"]["recipe"]
        assert ("distractors-train" in r["trained_on"]) == (chosen == "with-distractors")
    # the two recipes differ only in the extra source, so their inner results must differ
    scores = recs[0]["inner_selection"]
    assert scores["plain"]["mean"] != scores["with-distractors"]["mean"]
    fixed = lobo.leave_one_out(blocks, FEATS, ["linear"], n_resamples=10)
    assert [r["held_out"] for r in fixed] == ["a", "b", "c"]
