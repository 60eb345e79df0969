"""Inputs the fuzz suite (tests/fuzz/targets.py) found mishandled, each fixed: a named error or
the same result from every reader, never a raw traceback or a silent change."""
import json
import math

import pytest

from capeval.errors import InputError
from capeval.inputs import read_coco, read_csv, read_jsonl
from capeval.stats import bootstrap_accuracy, distractor_accuracy, pairwise_accuracy, williams_test
from capeval.stream.readers import open_rows


def test_accuracy_over_zero_pairs_is_refused():
    # Was: NaN accuracies with numpy warnings, then a bare ValueError from the bootstrap.
    with pytest.raises(InputError, match="no pairs"):
        pairwise_accuracy([], [], [])
    with pytest.raises(InputError, match="no pairs"):
        distractor_accuracy([], [])
    acc = pairwise_accuracy([1.0], [0.0], [0])
    assert acc.mean == 1.0 and bootstrap_accuracy(acc, n_resamples=5).low == 1.0


@pytest.mark.parametrize("n", [float("nan"), float("inf"), -float("inf"), "20", True, None, [20]])
def test_williams_n_not_a_finite_integer_is_refused(n):
    # Was: ValueError (NaN) / OverflowError (inf) from int(n).
    with pytest.raises(InputError, match="integer n > 3"):
        williams_test(0.5, 0.3, 0.2, n)
    assert math.isfinite(williams_test(0.5, 0.3, 0.2, 20.0).t)


def test_williams_n_beyond_int64():
    # Was: a bare TypeError from SciPy (the df reached it as a Python object).
    r = williams_test(0.5, 0.3, 0.2, 10**30)
    assert math.isfinite(r.t) and 0 <= r.p_value <= 1
    assert williams_test(0.5, 0.3, 0.2, 20).p_value == williams_test(0.5, 0.3, 0.2, 20.0).p_value


@pytest.mark.parametrize("bad", [[1], {"a": 1}, True, None])
@pytest.mark.parametrize("where", ["results", "annotations"])
def test_coco_image_id_must_be_an_integer_or_string(tmp_path, bad, where):
    # Was: a bare TypeError (unhashable list/dict), or true read as image 1.
    anns = {"annotations": [{"image_id": 1, "caption": "a dog"}]}
    res = [{"image_id": 1, "caption": "a dog"}]
    (anns["annotations"] if where == "annotations" else res).append({"image_id": bad, "caption": "x"})
    a, r = tmp_path / "a.json", tmp_path / "r.json"
    a.write_text(json.dumps(anns))
    r.write_text(json.dumps(res))
    with pytest.raises(InputError, match="image_id must be an integer or a string"):
        read_coco(r, a)


def test_coco_annotations_not_a_list_is_refused(tmp_path):
    a, r = tmp_path / "a.json", tmp_path / "r.json"
    a.write_text(json.dumps({"annotations": {"image_id": 1, "caption": "x"}}))
    r.write_text(json.dumps([{"image_id": 1, "caption": "x"}]))
    with pytest.raises(InputError, match="must be a list"):
        read_coco(r, a)


@pytest.mark.parametrize("key", ["true", "false"])
def test_jsonl_boolean_id_is_refused_by_both_readers(tmp_path, key):
    # Was accepted as the integer 1/0 (bool is an int in Python): true and 1 collided as duplicates.
    p = tmp_path / "x.jsonl"
    p.write_text(f'{{"id": {key}, "candidate": "a", "references": ["a"]}}\n')
    with pytest.raises(InputError, match="id must be a string or integer"):
        read_jsonl(p)
    with pytest.raises(InputError, match="id must be a string or integer"):
        list(open_rows(p))


@pytest.mark.parametrize("text", [
    "candidate,ref1\rx,a\ry,b\r",                   # classic Mac line ends
    "candidate,ref1\r\nx,a\r\ny,b\r\n",             # CRLF
    "candidate,ref1\nx,\"a\rb\"\ny,b\n",             # a quoted \r inside a cell
    "candidate,ref1\n\"x\r\ny\",a\ry,b\n",           # quoted CRLF, then a lone \r line end
])
def test_csv_line_ends_read_alike_in_memory_and_streamed(tmp_path, text):
    # Was: a file with lone \r line ends read in memory but refused when streamed (and row ids,
    # which are line numbers without an id column, could differ).
    p = tmp_path / "x.csv"
    p.write_bytes(text.encode())
    ids, cands, refs = read_csv(p)
    assert [(str(k), c, r) for _, k, c, r in open_rows(p)] == list(zip(ids, cands, refs))
    assert len(ids) == 2


def test_streamed_cider_df_takes_a_lone_surrogate_as_capeval_score_does():
    # Was: a bare UnicodeEncodeError from the df pass (hashing n-grams as strict UTF-8).
    import capeval

    rows = [("a b", ["a b"]), ("a", ["\ud800 a"]), ("b", ["b \udfff"])]
    whole = capeval.score([c for c, _ in rows], [r for _, r in rows], ["bleu1", "cider_d"], tokenizer="none")
    streamed = capeval.score_stream(iter(rows), ["bleu1", "cider_d"], tokenizer="none", chunk_size=1)
    for m in ("bleu1", "cider_d"):
        assert list(streamed.per_caption[m]) == list(whole.per_caption[m])
        assert streamed.corpus[m] == whole.corpus[m]


@pytest.mark.parametrize("scale", [1e300, 1e-300, 1e160])
def test_bootstrap_pearson_of_huge_or_tiny_values(scale):
    # Was: squares overflowed, so every resample's r was finite/inf = 0 (a CI of [0, 0] for r ≈ 0.5),
    # or underflowed to 0/0 = NaN; the full-sample r (SciPy) was right.
    import numpy as np

    from capeval.stats import bootstrap_correlation, pearson
    from capeval.stats.correlation import batched

    x = np.array([1.0, -1.0, 2.0, 0.5, 0.0, 3.0]) * scale
    y = [1.0, 2.0, 3.0, 4.0, 5.0, 7.0]
    r = pearson(x, y).value
    assert batched("pearson")(x[None], np.asarray(y)[None])[0] == pytest.approx(r, rel=1e-12)
    big = bootstrap_correlation(x, y, "pearson", n_resamples=200)
    unit = bootstrap_correlation(x / scale, y, "pearson", n_resamples=200)
    assert (big.low, big.high) == pytest.approx((unit.low, unit.high), rel=1e-12)
    assert big.undefined == unit.undefined


def test_paired_bootstrap_without_a_defined_resample_says_so():
    # Was: p = 1.0 (and a "Mean of empty slice" warning) from zero usable resamples.
    from capeval.stats import paired_bootstrap_correlation

    # n = 3 with one tie: with a single resample drawn, the human scores of it are constant or not;
    # find a seed where every resample is undefined, then the summary must say NaN, not p = 1.
    for seed in range(200):
        p = paired_bootstrap_correlation([1, 2, 3], [3, 1, 2], [1, 1, 2], "pearson", n_resamples=1, seed=seed)
        if p.undefined == 1:
            assert math.isnan(p.p_value) and math.isnan(p.low) and math.isnan(p.a_better)
            break
    else:
        pytest.fail("no all-undefined resample found")
    ok = paired_bootstrap_correlation([1, 2, 3, 4], [4, 1, 2, 3], [1, 2, 2, 3], "pearson", n_resamples=50)
    assert 0 < ok.p_value <= 1 and ok.undefined < 50
