import numpy as np
import pytest

import capeval.api
from capeval.paths import cache_root
from capeval.service import cache as C
from capeval.service.scoring import score_units

CANDS = ["a dog runs on the grass", "two cats sleep", "a man rides a red bike", "a dog plays"]
REFS = [["a dog is running", "the dog runs on grass"], ["two cats are sleeping", "cats asleep"],
        ["a man riding a bike", "a cyclist on a red bike"], ["a dog playing with a ball", "dog at play"]]


def test_digest_is_content_and_order_sensitive():
    d = C.corpus_digest(CANDS, REFS)
    assert d == C.corpus_digest(list(CANDS), [list(r) for r in REFS])
    assert d != C.corpus_digest(CANDS[::-1], REFS[::-1])
    assert d != C.corpus_digest(CANDS[:-1] + ["a dog plays."], REFS)
    # separators cannot be forged by moving text between fields
    assert C.corpus_digest(["a b"], [["c"]]) != C.corpus_digest(["a"], [["b c"]])


def test_key_covers_settings():
    base = dict(variant="cider_d_coco", tokenizer="ptb", options=None)
    k = C.score_key("x", "cider_d", **base)
    assert k == C.score_key("x", "cider_d", **base)
    assert k != C.score_key("x", "cider_d", **{**base, "tokenizer": "none"})
    assert k != C.score_key("x", "cider_d", **{**base, "options": {"df": "coco-val"}})
    assert k != C.score_key("x", "bleu4", **base)
    assert k != C.score_key("y", "cider_d", **base)


def test_default_dir_honours_env(monkeypatch, tmp_path):
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c"
    monkeypatch.delenv("CAPEVAL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_root() == tmp_path / "capeval"


def test_roundtrip_disabled_and_corrupt(tmp_path):
    cache = C.ScoreCache(tmp_path)
    item = C.CachedScores("bleu4", np.array([0.1, 0.25, 1e-300]), 0.3, "bleu_coco|out:bleu4|version:0")
    assert cache.get("ab" * 32) is None and cache.misses == 1
    cache.put("ab" * 32, item)
    got = cache.get("ab" * 32)
    assert got.metric == "bleu4" and got.signature == item.signature and got.corpus == 0.3
    np.testing.assert_array_equal(got.per_unit, item.per_unit)
    assert cache.hits == 1
    off = C.ScoreCache(tmp_path, enabled=False)
    assert off.get("ab" * 32) is None
    off.put("cd" * 32, item)
    assert not (tmp_path / "scores" / "cd").exists()
    path = tmp_path / "scores" / "ab" / ("ab" * 32 + ".npz")
    path.write_bytes(b"not a zip")
    assert cache.get("ab" * 32) is None


@pytest.fixture
def spy(monkeypatch):
    calls = []
    real = capeval.api.score

    def wrapped(cands, refs, metrics, **kw):
        calls.append(list(metrics))
        return real(cands, refs, metrics, **kw)

    monkeypatch.setattr(capeval.api, "score", wrapped)
    return calls


def test_score_units_hit_and_miss(tmp_path, spy):
    cache = C.ScoreCache(tmp_path)
    first = score_units(CANDS, REFS, ["bleu4", "cider_d"], tokenizer="none", cache=cache)
    assert spy == [["bleu4", "cider_d"]] and first.details["cached"] == {"bleu4": False, "cider_d": False}
    again = score_units(CANDS, REFS, ["cider_d", "bleu4"], tokenizer="none", cache=cache)
    assert spy == [["bleu4", "cider_d"]], "a warm cache must not score again"
    assert list(again.per_caption) == ["cider_d", "bleu4"] and all(again.details["cached"].values())
    for m in ("bleu4", "cider_d"):
        np.testing.assert_array_equal(again.per_caption[m], first.per_caption[m])
        assert again.signatures[m] == first.signatures[m] and again.corpus[m] == first.corpus[m]
    more = score_units(CANDS, REFS, ["bleu4", "bleu1"], tokenizer="none", cache=cache)
    assert spy[-1] == ["bleu1"] and more.details["cached"] == {"bleu4": True, "bleu1": False}
    # CIDEr's df depends on the whole unit list, so a different list must miss
    score_units(CANDS[:3], REFS[:3], ["cider_d"], tokenizer="none", cache=cache)
    assert spy[-1] == ["cider_d"]
    fresh = score_units(CANDS, REFS, ["bleu4"], tokenizer="none", cache=C.ScoreCache(tmp_path, enabled=False))
    assert spy[-1] == ["bleu4"] and not fresh.details["cached"]["bleu4"]


# --- damaged, swapped and stale cache files are recomputed, never trusted ----------------
def _fresh():
    return score_units(CANDS, REFS, ["bleu4", "cider_d"], tokenizer="none", cache=C.ScoreCache(enabled=False))


def _files(tmp_path):
    return sorted((tmp_path / "scores").rglob("*.npz"))


def _flip_score_bit(p):
    # one bit inside the stored scores themselves (the zip CRC should notice)
    data = bytearray(p.read_bytes())
    with np.load(p) as z:
        at = bytes(data).find(np.asarray(z["per_unit"], dtype="<f8").tobytes())
    assert at > 0
    data[at + 3] ^= 0x01
    p.write_bytes(bytes(data))


def _edit_consistently(p):
    # a valid archive whose score changed by one ulp (no zip error to notice it)
    with np.load(p) as z:
        fields = {k: z[k] for k in z.files}
    fields["per_unit"] = fields["per_unit"].copy()
    fields["per_unit"][0] = np.nextafter(fields["per_unit"][0], 2.0)
    with open(p, "wb") as fh:
        np.savez(fh, **fields)


@pytest.mark.parametrize("damage", [
    lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),  # truncated
    lambda p: p.write_bytes(b""),                                          # empty
    _flip_score_bit,                                                        # one bit flipped
    _edit_consistently,                                                     # edited, valid zip
], ids=["truncated", "empty", "bitflip", "edited"])
def test_damaged_cache_file_is_recomputed_and_rewritten(tmp_path, damage):
    cache = C.ScoreCache(tmp_path)
    first = score_units(CANDS, REFS, ["bleu4", "cider_d"], tokenizer="none", cache=cache)
    for p in _files(tmp_path):
        damage(p)
    again = score_units(CANDS, REFS, ["bleu4", "cider_d"], tokenizer="none", cache=cache)
    assert again.details["cached"] == {"bleu4": False, "cider_d": False} and cache.rejected == 2
    for m in ("bleu4", "cider_d"):
        assert again.per_caption[m].tolist() == first.per_caption[m].tolist() == _fresh().per_caption[m].tolist()
        assert again.corpus[m] == first.corpus[m] and again.signatures[m] == first.signatures[m]
    # rewritten: the next call hits
    assert all(score_units(CANDS, REFS, ["bleu4", "cider_d"], tokenizer="none", cache=cache).details["cached"].values())


def test_swapped_cache_files_are_not_reported_as_the_other_metric(tmp_path):
    cache = C.ScoreCache(tmp_path)
    score_units(CANDS, REFS, ["bleu4"], tokenizer="none", cache=cache)
    score_units(CANDS, REFS, ["cider_d"], tokenizer="none", cache=cache)
    a, b = _files(tmp_path)
    da, db = a.read_bytes(), b.read_bytes()
    a.write_bytes(db)
    b.write_bytes(da)
    got = score_units(CANDS, REFS, ["bleu4", "cider_d"], tokenizer="none", cache=cache)
    assert got.details["cached"] == {"bleu4": False, "cider_d": False}
    fresh = _fresh()
    assert got.corpus == fresh.corpus and got.signatures == fresh.signatures


def test_a_change_of_a_resource_a_family_reads_misses_and_of_another_does_not(tmp_path, monkeypatch):
    """Pointing a resource's variable at other files changes the keys of the families that read
    it (old WMD/WEmbSim numbers are never returned for new vectors), and only theirs: installing
    another encoder keeps BLEU's entries."""
    from capeval.metrics.registry import family_for

    vec_a, vec_b = tmp_path / "vecA", tmp_path / "vecB"
    for d, payload in ((vec_a, b"a"), (vec_b, b"bb")):
        d.mkdir()
        (d / "glove_6B_50d_emb.npy").write_bytes(payload)
    monkeypatch.setenv("CAPEVAL_GLOVE_6B_50D", str(vec_a))
    cache = C.ScoreCache(tmp_path / "c")

    def cached(metric):
        return score_units(CANDS, REFS, [metric], tokenizer="none", cache=cache).details["cached"][metric]

    rouge = family_for("rouge_l")
    # ROUGE-L standing in for a family that reads the vectors (WMD would need real ones)
    monkeypatch.setattr(rouge, "cache_resources", ("glove-6b-50d",))
    assert not cached("bleu4") and not cached("rouge_l")
    assert cached("bleu4") and cached("rouge_l")
    monkeypatch.setenv("CAPEVAL_GLOVE_6B_50D", str(vec_b))
    assert cached("bleu4") and not cached("rouge_l")
    state = C.resource_state()["glove-6b-50d"]
    assert state[0][0] == str(vec_b.resolve()) and any(e[0].endswith("glove_6B_50d_emb.npy") for e in state[1:])
    # a family that does not say what it reads depends on every resource
    monkeypatch.setattr(rouge, "cache_resources", None)
    assert not cached("rouge_l") and cached("rouge_l")
    monkeypatch.setenv("CAPEVAL_GLOVE_6B_50D", str(vec_a))
    assert not cached("rouge_l") and cached("bleu4")


def test_a_resource_rewritten_with_its_size_and_mtime_put_back_misses(tmp_path, monkeypatch):
    import os
    import time

    vec = tmp_path / "vec"
    vec.mkdir()
    f = vec / "glove_6B_50d_emb.npy"
    f.write_bytes(b"aaaa")
    monkeypatch.setenv("CAPEVAL_GLOVE_6B_50D", str(vec))
    before = C.resource_state(["glove-6b-50d"])
    st = f.stat()
    time.sleep(0.01)
    with open(f, "r+b") as fh:  # same inode, same size
        fh.write(b"bbbb")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # touch -r
    assert f.stat().st_size == st.st_size and f.stat().st_mtime_ns == st.st_mtime_ns
    assert C.resource_state(["glove-6b-50d"]) != before


def test_encoder_families_depend_on_the_encoder_they_load_only():
    from capeval.metrics.registry import family_for

    for m in ("sentsim_centroid", "bertscore_f"):
        cls = family_for(m)
        assert cls.resources_for({}) == ("encoder-minilm-l6",)
        assert cls.resources_for({"model": "mpnet"}) == ("encoder-mpnet-base",)
        assert cls.resources_for({"model": "some-org/some-model"}) == ()
    assert family_for("spice").resources_for({}) == ("wordnet", "spice-jar", "corenlp-3.6.0")
    assert family_for("learned").resources_for({}) is None and family_for("nneval").resources_for({}) is None
    # every resource is registered in every process, whatever was imported (stable keys)
    assert {"spice-jar", "corenlp-3.6.0"} <= set(C.resource_state())


def test_cache_revision_invalidates_only_when_bumped():
    base = dict(variant="cider_d_coco", tokenizer="ptb", options=None)
    assert C.score_key("x", "cider_d", **base) == C.score_key("x", "cider_d", **base, revision=0)
    assert C.score_key("x", "cider_d", **base) != C.score_key("x", "cider_d", **base, revision=1)


def test_score_units_keys_carry_the_family_revision(tmp_path, monkeypatch):
    from capeval.metrics.registry import family_for

    cache = C.ScoreCache(tmp_path)
    score_units(CANDS, REFS, ["cider_d"], tokenizer="none", cache=cache)
    assert score_units(CANDS, REFS, ["cider_d"], tokenizer="none", cache=cache).details["cached"]["cider_d"]
    cls = family_for("cider_d")
    monkeypatch.setattr(cls, "cache_revision", cls.cache_revision + 1)
    assert not score_units(CANDS, REFS, ["cider_d"], tokenizer="none", cache=cache).details["cached"]["cider_d"]
