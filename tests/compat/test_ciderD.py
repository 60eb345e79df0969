"""capeval.compat.ciderD.CiderD against the ruotianluo/cider fork's published algorithm, written
out below from its formula (the fork is not on PyPI), with df from the scored set and from a df
file; the fork's df pickles through ``capeval compat convert-cider-df`` (restricted reading) and
``allow_pickle``."""
from __future__ import annotations

import collections
import json
import math
import pickle
import random

import numpy as np
import pytest
from typer.testing import CliRunner

from capeval.cli.main import app
from capeval.compat import CompatNotice
from capeval.compat._notices import _forget
from capeval.compat.ciderD import CiderD
from capeval.compat.fork_df import read_fork_df
from capeval.errors import InputError

from ._same import assert_same


# -- the oracle: CIDEr-D as the fork defines it ------------------------------------------------

def _counts(sentence: str, n: int = 4) -> dict:
    words = sentence.split()
    out: dict = {}
    for k in range(1, n + 1):
        for i in range(len(words) - k + 1):
            g = tuple(words[i:i + k])
            out[g] = out.get(g, 0) + 1
    return out


def _vector(counts: dict, df, log_n: float, n: int = 4):
    """tf-idf per order, norms, and the length the penalty uses (the number of bigrams)."""
    vec = [{} for _ in range(n)]
    norm = [0.0] * n
    length = 0
    for g, tf in counts.items():
        k = len(g) - 1
        v = float(tf) * (log_n - np.log(max(1.0, df.get(g, 0.0))))
        vec[k][g] = v
        norm[k] += pow(v, 2)
        if k == 1:
            length += tf
    return vec, [np.sqrt(x) for x in norm], length


def _similarity(h, r, sigma: float = 6.0, n: int = 4):
    (vh, nh, lh), (vr, nr, lr) = h, r
    delta = float(lh - lr)
    val = np.array([0.0] * n)
    for k in range(n):
        for g in vh[k]:
            # clipped: the hypothesis' weight counts at most as much as the reference's
            val[k] += min(vh[k][g], vr[k].get(g, 0.0)) * vr[k].get(g, 0.0)
        if nh[k] != 0 and nr[k] != 0:
            val[k] /= nh[k] * nr[k]
        val[k] *= np.e ** (-(delta ** 2) / (2 * sigma ** 2))
    return val


def oracle(gts: dict, res: list, df: dict | None = None, ref_len: float | None = None):
    """(mean, per entry of res): df from the refs of every res entry unless ``df``/``ref_len`` given."""
    refs = [gts[item["image_id"]] for item in res]
    if df is None:
        df = collections.Counter()
        for rs in refs:
            df.update({g for r in rs for g in _counts(r)})
        ref_len = len(res)
    log_n = np.log(float(ref_len))
    scores = []
    for item, rs in zip(res, refs):
        h = _vector(_counts(item["caption"][0]), df, log_n)
        total = np.array([0.0] * 4)
        for r in rs:
            total += _similarity(h, _vector(_counts(r), df, log_n))
        s = np.mean(total)
        s /= len(rs)
        s *= 10.0
        scores.append(s)
    return np.mean(np.array(scores)), np.array(scores)


# -- corpora ----------------------------------------------------------------------------------

WORDS = "a the dog cat man woman red blue runs sits on in grass street ball two with".split()


def _sentence(rng, lo=0, hi=12):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def _corpus(seed: int, images: int = 12, samples: int = 5):
    """SCST's shape: ``samples`` sampled captions per image, each scored against the image's refs."""
    rng = random.Random(seed)
    gts = {i: [_sentence(rng, 1) for _ in range(rng.randint(1, 5))] for i in range(images)}
    res = [{"image_id": i, "caption": [_sentence(rng)]} for i in range(images) for _ in range(samples)]
    return gts, res


def _df_pickle(path, refsets, protocol=2):
    """A df file as self-critical training's prepro_ngrams.py writes it."""
    df = collections.defaultdict(float)
    for rs in refsets:
        for g in {g for r in rs for g in _counts(r)}:
            df[g] += 1
    with open(path, "wb") as f:
        pickle.dump({"document_frequency": df, "ref_len": len(refsets)}, f, protocol=protocol)
    return df, len(refsets)


@pytest.fixture(autouse=True)
def fresh_notices():
    _forget()
    yield
    _forget()


@pytest.mark.parametrize("seed", range(6))
def test_corpus_df_equals_the_forks_formula(seed):
    gts, res = _corpus(seed)
    assert_same(CiderD(df="corpus").compute_score(gts, res), oracle(gts, res))


def test_one_entry_is_zero_as_in_the_fork():
    gts, res = _corpus(1, images=1, samples=1)
    assert_same(CiderD().compute_score(gts, res), oracle(gts, res))
    assert CiderD().compute_score(gts, res)[0] == 0.0


@pytest.mark.parametrize("protocol", [0, 2, pickle.HIGHEST_PROTOCOL])
def test_df_file_equals_the_forks_formula(tmp_path, monkeypatch, protocol):
    train_gts, _ = _corpus(100, images=40)
    df, n = _df_pickle(tmp_path / "train-words.p", list(train_gts.values()), protocol)
    out = CliRunner().invoke(app, ["compat", "convert-cider-df", str(tmp_path / "train-words.p"),
                                   str(tmp_path / "train-words.json")])
    assert out.exit_code == 0, out.output
    assert f"{len(df)} n-grams over {n} reference sets" in out.output
    gts, res = _corpus(7)
    expected = oracle(gts, res, df, n)
    assert_same(CiderD(df=str(tmp_path / "train-words.json")).compute_score(gts, res), expected)
    # The fork's own lookup: a name, read as data/<name> under the working directory.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "train-words.json").rename(tmp_path / "data" / "train-words.json")
    assert_same(CiderD(df="train-words").compute_score(gts, res), expected)
    # A fixed df: one entry is scored on its own (no ln 1 = 0).
    one = CiderD(df="train-words").compute_score(gts, res[:1])
    assert_same(one, oracle(gts, res[:1], df, n))
    assert one[0] > 0


def test_a_pickle_is_read_only_when_allowed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    train_gts, _ = _corpus(3, images=20)
    df, n = _df_pickle(tmp_path / "data" / "coco-train-idxs.p", list(train_gts.values()))
    with pytest.raises(InputError, match=r"is a pickle.*capeval compat convert-cider-df data/coco-train-idxs.p"):
        CiderD(df="coco-train-idxs")
    with pytest.warns(UserWarning, match="runs any code the file carries"):
        scorer = CiderD(df="coco-train-idxs", allow_pickle=True)
    gts, res = _corpus(4)
    assert_same(scorer.compute_score(gts, res), oracle(gts, res, df, n))
    with pytest.raises(InputError, match="no df file found"):
        CiderD(df="coco-val")


def test_sigma_is_ignored_as_by_the_fork():
    gts, res = _corpus(5)
    with pytest.warns(CompatNotice, match="ignores sigma"):
        got = CiderD(sigma=3.0).compute_score(gts, res)
    assert_same(got, oracle(gts, res))


def test_refusals_name_the_entry():
    gts, res = _corpus(2)
    with pytest.raises(InputError, match=r"res\[1\] has image_id 99"):
        CiderD().compute_score(gts, [res[0], {"image_id": 99, "caption": ["a dog"]}])
    with pytest.raises(InputError, match=r"res\[0\]\['caption'\] must be a list holding one caption"):
        CiderD().compute_score(gts, [{"image_id": 0, "caption": "a dog"}])
    with pytest.raises(InputError, match="res is empty"):
        CiderD().compute_score(gts, [])
    with pytest.raises(InputError, match="n must be 4"):
        CiderD(n=3)


# -- the restricted reader ----------------------------------------------------------------------

class _Payload:
    """Unpickling this would run a command (the classic pickle attack)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("bad, match", [
    (lambda m: {"document_frequency": {("a",): 1.0}, "ref_len": _Payload(m)}, "posix.system|os.system"),
    (lambda m: _Payload(m), "posix.system|os.system"),
    (lambda m: {"document_frequency": {("a",): 1.0}, "ref_len": np.float64(5)}, "numpy"),
    (lambda m: {"document_frequency": {"a": 1.0}, "ref_len": 5}, "not a tuple of strings"),
    # protocol 2 writes bytes as a call to _codecs.encode: refused before it runs
    (lambda m: {"document_frequency": {(b"a",): 1.0}, "ref_len": 5}, "_codecs.encode"),
    (lambda m: {"document_frequency": {("a",): [1.0]}, "ref_len": 5}, "must be a count"),
    (lambda m: {"document_frequency": {("a",): 9.0}, "ref_len": 5}, "must be a count between 0 and ref_len"),
    (lambda m: {"document_frequency": {frozenset(["a"]): 1.0}, "ref_len": 5}, "frozenset"),
    (lambda m: {"document_frequency": [("a", 1.0)], "ref_len": 5}, "must be a dict"),
    (lambda m: {"document_frequency": {}, "ref_len": 1}, "whole number >= 2"),
    (lambda m: {"document_frequency": {}, "ref_len": 5, "extra": 1}, "unexpected key 'extra'"),
    (lambda m: ["document_frequency", "ref_len"], "not a CIDEr df pickle"),
])
def test_the_converter_refuses_anything_but_the_documented_types(tmp_path, bad, match):
    marker = tmp_path / "ran"
    src = tmp_path / "bad.p"
    src.write_bytes(pickle.dumps(bad(marker), protocol=2))  # the fork's files are protocol 2 (or 0)
    with pytest.raises(InputError, match=match):
        read_fork_df(src)
    out = CliRunner().invoke(app, ["compat", "convert-cider-df", str(src), str(tmp_path / "out.json")])
    assert out.exit_code == 2 and "error:" in out.output
    assert not marker.exists(), "the pickle's payload ran"
    assert not (tmp_path / "out.json").exists()


def test_converter_output_policy_and_summary(tmp_path):
    src = tmp_path / "df.p"
    with open(src, "wb") as f:
        pickle.dump({"document_frequency": collections.defaultdict(float, {("a",): 2.0, ("a", "dog"): 1.0,
                                                                          ("a b",): 1.0, (): 1.0}),
                     "ref_len": 3}, f, protocol=2)
    dest = tmp_path / "df.json"
    out = CliRunner().invoke(app, ["compat", "convert-cider-df", str(src), str(dest), "--json"])
    assert out.exit_code == 0, out.output
    summary = json.loads(out.output)
    assert (summary["ngrams"], summary["skipped"], summary["n_units"]) == (2, 2, 3)
    assert json.loads(dest.read_text())["df"] == {"a": 2.0, "a dog": 1.0}
    again = CliRunner().invoke(app, ["compat", "convert-cider-df", str(src), str(dest)])
    assert again.exit_code == 2 and "already exists" in again.output
    same = CliRunner().invoke(app, ["compat", "convert-cider-df", str(src), str(src), "--overwrite"])
    assert same.exit_code == 2 and "is the input" in same.output
    assert math.isfinite(CiderD(df=str(dest)).compute_score({1: ["a dog"], 2: ["a cat"]},
                                                            [{"image_id": 1, "caption": ["a dog"]}])[0])


def test_bytes_keys_of_a_newer_protocol_are_refused_by_the_structure_check(tmp_path):
    src = tmp_path / "bytes.p"
    src.write_bytes(pickle.dumps({"document_frequency": {(b"a",): 1.0}, "ref_len": 5}, protocol=4))
    with pytest.raises(InputError, match="not a tuple of strings"):
        read_fork_df(src)
