import numpy as np
import pytest

import capeval
from capeval.errors import InputError, UnknownMetricError

CANDS = ["a dog runs on the grass", "two cats sleep", "a red ball"]
REFS = [["a dog is running on grass", "the dog runs"], ["two cats are sleeping"], ["a ball that is red", "red ball"]]


def test_score_contract_shapes_and_order():
    r = capeval.score(CANDS, REFS, ["cider_d", "bleu4", "rouge_l"], tokenizer="none")
    assert list(r.corpus) == ["cider_d", "bleu4", "rouge_l"]
    for name, values in r.per_caption.items():
        assert len(values) == len(CANDS)
        assert name in r.signatures and r.signatures[name].endswith(f"version:{capeval.__version__}")
    assert r.corpus["rouge_l"] == pytest.approx(np.mean(r.per_caption["rouge_l"]))
    assert r.n == 3


def test_per_caption_in_input_order():
    r1 = capeval.score(CANDS, REFS, ["bleu1", "rouge_l", "cider_d"], tokenizer="none")
    perm = [2, 0, 1]
    r2 = capeval.score([CANDS[i] for i in perm], [REFS[i] for i in perm], ["bleu1", "rouge_l", "cider_d"], tokenizer="none")
    for name in r1.per_caption:
        np.testing.assert_array_equal(r1.per_caption[name][perm], r2.per_caption[name])


def test_duplicated_rows_score_like_the_reference_loop():
    """Dedup is an optimisation: a corpus with repeated rows must equal scoring them one by one."""
    from tests.metrics._coco_oracle import coco_scores

    cands = CANDS * 3 + ["a dog runs on the grass"]
    refs = REFS * 3 + [["a cat"]]
    r = capeval.score(cands, refs, ["bleu4", "rouge_l", "cider_d"], tokenizer="none")
    ref = coco_scores(cands, refs)
    for name in ("bleu4", "rouge_l", "cider_d"):
        np.testing.assert_array_equal(r.per_caption[name], ref[name][1])
        assert r.corpus[name] == ref[name][0]


def test_unknown_metric_lists_known():
    with pytest.raises(UnknownMetricError, match="unknown metric 'blue4'.*bleu4"):
        capeval.score(CANDS, REFS, ["blue4"])


def test_single_unit_cider_requires_df(tmp_path):
    with pytest.raises(InputError, match="1 unit.*df file"):
        capeval.score(CANDS[:1], REFS[:1], ["cider_d"], tokenizer="none")


def test_cider_df_file_roundtrip(tmp_path):
    df_path = tmp_path / "df.json"
    full = capeval.score(CANDS, REFS, ["cider_d"], tokenizer="none", options={"cider_d": {"save_df": df_path}})
    again = capeval.score(CANDS, REFS, ["cider_d"], tokenizer="none", options={"cider_d": {"df": df_path}})
    np.testing.assert_array_equal(full.per_caption["cider_d"], again.per_caption["cider_d"])
    assert "df:corpus:3" in full.signatures["cider_d"]
    assert "df:file:" in again.signatures["cider_d"]
    # With a saved df, one caption can be scored alone and gets its in-corpus score.
    one = capeval.score(CANDS[1:2], REFS[1:2], ["cider_d"], tokenizer="none", options={"cider_d": {"df": df_path}})
    assert one.per_caption["cider_d"][0] == full.per_caption["cider_d"][1]


def test_original_cider_differs_from_cider_d_and_is_named_apart():
    r = capeval.score(CANDS, REFS, ["cider", "cider_d"], tokenizer="none")
    assert r.signatures["cider"].startswith("cider_vrama91|")
    assert r.signatures["cider_d"].startswith("cider_d_coco|")
    assert not np.array_equal(r.per_caption["cider"], r.per_caption["cider_d"])


def test_original_cider_equals_cider_d_when_clipping_and_penalty_vanish():
    """With every reference equal to the candidate, min(h, r) = h and delta = 0."""
    cands = ["a dog runs on the grass", "two cats sleep on a mat"]
    refs = [[c, c] for c in cands]
    r = capeval.score(cands, refs, ["cider", "cider_d"], tokenizer="none")
    np.testing.assert_array_equal(r.per_caption["cider"], r.per_caption["cider_d"])


def test_list_metrics_has_contract_names():
    names = {m.name for m in capeval.list_metrics()}
    assert {"bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d", "cider"} <= names


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests._budget import examples  # noqa: E402

from capeval.validation import LINE_BREAKS  # noqa: E402

_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="".join(LINE_BREAKS)),
    min_size=1,
    max_size=30,
).filter(lambda s: s.strip())


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_TEXT, st.lists(_TEXT, min_size=1, max_size=3)), min_size=2, max_size=6))
def test_score_total_on_random_unicode(units):
    """Any valid unicode goes through PTB tokenization and every n-gram metric: one finite
    score per candidate, in range, nothing shifted."""
    cands = [u[0] for u in units]
    refs = [u[1] for u in units]
    names = ["bleu1", "bleu4", "rouge_l", "cider_d", "cider"]
    # allow_empty: some random texts are all punctuation, i.e. empty after PTB (counted, warned)
    r = capeval.score(cands, refs, names, allow_empty=True)
    for name in names:
        v = r.per_caption[name]
        assert len(v) == len(cands) and np.all(np.isfinite(v)) and np.all(v >= 0)
    assert np.all(r.per_caption["bleu1"] <= 1) and np.all(r.per_caption["rouge_l"] <= 1)
    assert np.all(r.per_caption["cider_d"] <= 10 + 1e-9)
    # Scoring a row alone (with the same df) gives the same BLEU/ROUGE: no cross-row shift.
    solo = capeval.score(cands[:1] * 2, refs[:1] * 2, ["bleu4", "rouge_l"], allow_empty=True)
    assert solo.per_caption["bleu4"][0] == r.per_caption["bleu4"][0]
    assert solo.per_caption["rouge_l"][0] == r.per_caption["rouge_l"][0]
