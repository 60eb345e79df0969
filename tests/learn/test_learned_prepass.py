"""The learned families' corpus pre-pass (``Metric.prepass``): CIDEr-D's df over the model's own
reference units. Given the pre-pass state of the whole input, merged from chunks, every row's
features are the in-memory ones (``==``) for chunk sizes 1, 7 and a random split; a df file
(option ``df``) fixes CIDEr-D's df and is named in the signature. The model step is row-local
(``capeval.learn.rowlocal``), so a model streams unless a feature depends on its batch-mates,
which ``cannot_stream`` names."""
from __future__ import annotations

import itertools
import random
from functools import reduce

import numpy as np
import pytest

import capeval
from capeval.errors import InputError
from capeval.learn import ranker
from capeval.learn.learned_metric import Learned
from capeval.learn.learned_metric import _load as learned_model
from capeval.learn.metric_support import UnitDf
from capeval.learn.nneval_metric import NNEval
from capeval.learn.nneval_metric import _load as nneval_model
from capeval.learn.ranker_features import parse
from capeval.learn.ranker_model import RankerModel
from capeval.metrics.registry import get_family
from tests._needs import family_needs
from tests.stream._rows import make_rows


def _tiny(max_refs):
    """A learned model over BLEU-4, CIDEr-D (a df feature), ROUGE-L and length. With
    ``max_refs=2`` the rows with 3-5 references are scored against groups of 2, and CIDEr-D's df
    counts those groups; with None, the rows as given."""
    feats = parse("bleu4+cider_d+rouge_l+length")
    k = len(feats)
    return RankerModel("linear", [np.linspace(0.5, 2.0, k)],
                       ranker.Scaler(np.zeros(k), np.full(k, 20.0), np.full(k, 0.5), np.ones(k)), feats, max_refs,
                       meta={"name": f"tiny-df-{max_refs}"})


def _texts(n: int, seed: int = 34):
    rows = make_rows(n, seed=seed)
    return [r["candidate"] for r in rows], [r["references"] for r in rows]


def _chunkings(n: int):
    rng = random.Random(34)
    for how in (1, 7, "random"):
        points = sorted(rng.sample(range(1, n), k=5)) if how == "random" else list(range(how, n, how))
        yield how, list(itertools.pairwise([0, *points, n]))


def _features(metric, cands, refs, df):
    if isinstance(metric, NNEval):
        return metric.model.features_for(cands, refs, refs=metric.refs, df=df).X
    return metric.model.features_for(cands, refs, df=df).X


def _check_chunked_features(cls, options, cands, refs):
    with cls(**options) as m:
        whole = _features(m, cands, refs, None)
        # the per-part fields; ood:N counts the rows scored and comes from the merged statistics
        fields = m.statistics(cands, refs).fields
        assert m.prepass(cands, refs) is not None
        for how, cuts in _chunkings(len(cands)):
            states = [m.prepass(cands[a:b], refs[a:b]) for a, b in cuts]
            state = reduce(lambda x, y: x + y, states)
            assert isinstance(state, UnitDf) and state.df.n_units == m.prepass(cands, refs).df.n_units
            assert cls.prepass_options(state) == {"df": state}
            chunked = np.vstack([_features(m, cands[a:b], refs[a:b], state.df) for a, b in cuts])
            assert np.array_equal(chunked, whole), f"features of chunks of {how}"
        # the instance given the state (option df) signs as the whole input's: no df field
        with cls(**options, **cls.prepass_options(state)) as given:
            a, b = cuts[0]
            assert given.statistics(cands[a:b], refs[a:b]).fields == fields


@pytest.mark.parametrize("max_refs", [2, None])
def test_learned_features_of_chunks_with_the_prepass_equal_the_whole(max_refs):
    cands, refs = _texts(40)
    if max_refs == 2:
        assert max(len(r) for r in refs) > 2  # some rows are split into reference groups
    _check_chunked_features(Learned, {"model": _tiny(max_refs)}, cands, refs)


@pytest.mark.needs(*family_needs(get_family("nneval")))
def test_nneval_features_of_chunks_with_the_prepass_equal_the_whole():
    """The shipped model scores each reference alone: the df counts every (candidate, reference)."""
    cands, refs = _texts(8, seed=3)
    _check_chunked_features(NNEval, {}, cands, refs)


def test_the_prepass_state_of_an_empty_batch_merges():
    m = Learned(model=_tiny(2))
    cands, refs = _texts(5)
    empty = m.prepass([], [])
    assert (empty + m.prepass(cands, refs)).df.df == m.prepass(cands, refs).df.df


def test_a_df_file_fixes_cider_d_and_is_named_in_the_signature(tmp_path):
    cands, refs = _texts(30)
    other_c, other_r = _texts(50, seed=9)
    path = tmp_path / "df.json"
    capeval.score(other_c, other_r, ["cider_d"], options={"cider_d": {"save_df": str(path)}})
    model = _tiny(None)
    fixed = capeval.score(cands, refs, ["cider_d"], options={"cider_d": {"df": str(path)}})
    X = model.features_for(cands, refs, df=Learned(model=model, df=str(path))._df).X
    assert np.array_equal(X[:, 1], fixed.per_caption["cider_d"] * 0.1)
    # in one call with CIDEr-D from the scored set, learned uses its own df, not the call's CIDEr-D
    both = capeval.score(cands, refs, ["cider_d", "learned"], options={"learned": {"model": model, "df": str(path)}})
    alone = Learned(model=model, df=str(path)).compute(cands, refs)
    assert np.array_equal(both.per_caption["learned"], alone.per_caption["learned"])
    plain = capeval.score(cands, refs, ["cider_d", "learned"], options={"learned": {"model": model}})
    assert not np.array_equal(plain.per_caption["learned"], both.per_caption["learned"])
    assert "|df:file:" in both.signatures["learned"] and "|df:" not in plain.signatures["learned"]
    # "corpus" is the default
    corpus = capeval.score(cands, refs, ["learned"], options={"learned": {"model": model, "df": "corpus"}})
    assert np.array_equal(corpus.per_caption["learned"], plain.per_caption["learned"])
    assert corpus.signatures["learned"] == plain.signatures["learned"]


def test_prepass_states_of_other_units_do_not_mix():
    cands, refs = _texts(6)
    groups, whole = Learned(model=_tiny(2)), Learned(model=_tiny(None))
    with pytest.raises(ValueError, match="different reference units"):
        groups.prepass(cands, refs) + whole.prepass(cands, refs)
    with pytest.raises(InputError, match="counted over other reference units"):
        Learned(model=_tiny(None), df=groups.prepass(cands, refs)).compute(cands, refs)
    with pytest.raises(InputError, match="learned: df=3 must be"):
        Learned(model=_tiny(None), df=3)


def test_cannot_stream_names_only_features_that_depend_on_their_batch(tmp_path):
    from ._floor_model import REFUSAL, floor_model

    # BERTScore with bert_score's batch padding floor (its default) depends on the batch mates
    assert REFUSAL + " around it" in Learned.cannot_stream({"model": floor_model(tmp_path / "floor.npz")})
    # the rest stream: CIDEr-D's df is the pre-pass, and the model combines a row's features
    # alone (capeval.learn.rowlocal); the shipped models' BERTScore features have no floor
    assert Learned.cannot_stream({}) is None
    assert NNEval.cannot_stream({}) is None
    assert Learned.cannot_stream({"model": "mpnet"}) is None
    assert Learned.cannot_stream({"model": _tiny(2)}) is None


@pytest.mark.parametrize("model,kw", [("default", {}), ("mpnet", {}), ("nneval", {}), ("nneval", {"clip": False})])
def test_a_rows_score_is_the_same_in_any_batch(model, kw):
    """The same feature rows predicted one at a time, all at once, in reverse, shuffled and in
    chunks of 7 give the same bits (``==``): what lets the families stream. numpy's matrix
    products (BLAS) did not (about a third of these rows differed in their last bits); the model
    step is ``capeval.learn.rowlocal``'s fixed-order sum."""
    m = nneval_model(None) if model == "nneval" else learned_model(model)
    lo, hi = m.scaler.lo, m.scaler.hi
    rng = np.random.default_rng(1)
    # inside and outside the training range (clipped, or extrapolated with clip=False), and a
    # repeated row
    X = rng.uniform(lo - 0.2 * (hi - lo), hi + 0.2 * (hi - lo), size=(300, len(m.features)))
    X[7] = X[3]
    whole = m.predict(X, **kw)
    assert np.all(np.isfinite(whole)) and len(np.unique(whole)) > 250
    assert np.array_equal(np.concatenate([m.predict(X[i:i + 1], **kw) for i in range(len(X))]), whole)
    assert np.array_equal(m.predict(X[::-1], **kw)[::-1], whole)
    perm = rng.permutation(len(X))
    shuffled = np.empty_like(whole)
    shuffled[perm] = m.predict(X[perm], **kw)
    assert np.array_equal(shuffled, whole)
    assert np.array_equal(np.concatenate([m.predict(X[a:a + 7], **kw) for a in range(0, len(X), 7)]), whole)
    assert whole[7] == whole[3]
