"""CiderDReward: batches against a fixed df are exactly pycocoevalcap's CIDEr-D with that df."""
from __future__ import annotations

import pytest

import capeval
from capeval import data
from capeval.errors import InputError
from capeval.metrics.cider import DocumentFrequency

from ._coco_oracle import coco_scores


class _ByString(DocumentFrequency):
    """The same df, looked up by n-gram string (the path every subclass takes)."""

    def lookup(self, grams):
        return super().lookup(grams)


@pytest.fixture(scope="module")
def coco(data_dir):
    t = data.load("tanti-coco", root=data_dir)
    n = 300
    cands, refs = list(t.systems["merge_1"][:n]), [list(r) for r in t.references[:n]]
    return capeval.text.tokenize_corpus(cands, refs)


def test_batches_equal_pycocoevalcap_on_the_df_set(coco):
    cands, refs = coco
    # pycocoevalcap on the whole set: df and ln(N) of the whole set; a caption's score depends
    # only on them and its own references, so any batch scored with that df must match its rows.
    oracle = coco_scores(cands, refs)["cider_d"][1]
    df = DocumentFrequency.from_references(refs, [1] * len(refs))
    reward = capeval.CiderDReward(df)
    for lo, hi in [(0, 1), (100, 150), (0, 300), (299, 300)]:
        got = reward(cands[lo:hi], refs[lo:hi])
        assert got.tolist() == oracle[lo:hi].tolist()
    # candidates that share no word with the df, and empty ones, are still exact (0 or the formula)
    odd = ["zzqx unseen words", "", "a a a a a a a a"]
    got = reward(odd, refs[:3])
    by_string = capeval.score(odd, refs[:3], ["cider_d"], tokenizer="none", allow_empty=True,
                              options={"cider_d": {"df": _ByString(df.df, df.n_units, df.source)}})
    assert got.tolist() == by_string.per_caption["cider_d"].tolist()


def test_packed_lookup_equals_string_lookup(coco):
    cands, refs = coco
    df = DocumentFrequency.from_references(refs[:150], [2] * 150)
    df.df["x  y"] = 3.0          # keys that can never be an n-gram of split() words are harmless
    df.df["a\tman"] = 3.0
    plain = capeval.score(cands, refs, ["cider_d"], tokenizer="none", options={"cider_d": {"df": df}})
    by_string = capeval.score(cands, refs, ["cider_d"], tokenizer="none",
                              options={"cider_d": {"df": _ByString(df.df, df.n_units, df.source)}})
    assert plain.per_caption["cider_d"].tolist() == by_string.per_caption["cider_d"].tolist()
    assert plain.signatures == by_string.signatures


def test_df_file_and_refusals(coco, tmp_path):
    cands, refs = coco
    df = DocumentFrequency.from_references(refs, [1] * len(refs))
    path = tmp_path / "df.json"
    df.save(path)
    from_file = capeval.CiderDReward(path)
    assert from_file(cands[:20], refs[:20]).tolist() == capeval.CiderDReward(df)(cands[:20], refs[:20]).tolist()
    assert "df:file:" in from_file.signature(refs[:20]) and "nrefs:5" in from_file.signature(refs[:20])
    with pytest.raises(InputError, match="fixed df"):
        capeval.CiderDReward("corpus")
    with pytest.raises(InputError, match="align"):
        from_file(cands[:2], refs[:3])
