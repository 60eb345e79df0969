"""Stop-word lists by name: shipped NLTK lists, library lists, files."""
from __future__ import annotations

import hashlib
from importlib import resources

import pytest

from capeval.errors import InputError
from capeval.text.stopwords import available_stopwords, get_stopwords, stopword_list

# SHA-256 recorded in data/STOPWORDS_PROVENANCE.txt: the coco-caption WMD scorer's file.
COCO_WMD_STOPWORDS_SHA = "990bbbe788d4e191f84116d965d6fd9b2815aa9d04d81bf8a46c16e68dc294f8"


def _shipped_bytes(name: str) -> bytes:
    return resources.files("capeval.text").joinpath("data").joinpath(name).read_bytes()


def test_nltk_153_is_the_coco_wmd_file():
    data = _shipped_bytes("nltk_english_153.txt")
    assert hashlib.sha256(data).hexdigest() == COCO_WMD_STOPWORDS_SHA
    assert len(data) == 742  # METHODS.md §7.1: 153 space-separated words, 742 bytes
    words = get_stopwords("nltk-153")
    assert len(words) == 153 and len(data.decode().split(" ")) == 153
    assert {"a", "the", "is", "won", "wouldn", "ma"} <= words.words
    assert "dog" not in words


def test_nltk_179_adds_exactly_the_apostrophe_forms():
    small = get_stopwords("nltk-153").words
    big = get_stopwords("nltk-179").words
    assert len(big) == 179
    assert small < big
    extra = big - small
    assert len(extra) == 26 and all("'" in w for w in extra)
    assert {"don't", "you're", "should've", "that'll"} <= extra


def test_aliases_share_one_identity():
    assert get_stopwords("nltk-2018").id == get_stopwords("nltk").id == "nltk-153"
    assert get_stopwords("nltk-2018").words == get_stopwords("nltk-153").words


def test_none_is_empty():
    assert len(get_stopwords("none")) == 0 and get_stopwords("none").id == "none"


def test_spacy_list_matches_spacy():
    pytest.importorskip("spacy")
    from spacy.lang.en.stop_words import STOP_WORDS

    sw = get_stopwords("spacy")
    assert sw.words == frozenset(STOP_WORDS)
    assert sw.id.startswith(f"spacy-{len(STOP_WORDS)}@")


def test_sklearn_list_or_clear_error():
    try:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
    except ImportError:
        with pytest.raises(FileNotFoundError, match="pip install scikit-learn"):
            get_stopwords("sklearn")
        return
    assert get_stopwords("sklearn").words == frozenset(ENGLISH_STOP_WORDS)


def test_file_list_is_identified_by_content(tmp_path):
    p = tmp_path / "stop.txt"
    p.write_text("foo bar\nbaz  foo\n", encoding="utf-8")
    sw = get_stopwords(str(p))
    assert sw.words == {"foo", "bar", "baz"}
    assert sw.id.startswith("file-3-")
    q = tmp_path / "stop2.txt"
    q.write_text("foo bar baz qux", encoding="utf-8")
    assert get_stopwords(str(q)).id != sw.id


def test_non_utf8_file_names_the_file(tmp_path):
    p = tmp_path / "latin1.txt"
    p.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(InputError, match="latin1.txt"):
        get_stopwords(str(p))


def test_unknown_name_lists_choices():
    with pytest.raises(InputError, match="nltk-153"):
        get_stopwords("klingon")
    assert "nltk-153" in available_stopwords()


def test_stopword_list_accepts_built_lists_and_rejects_sets():
    sw = get_stopwords("nltk-153")
    assert stopword_list(sw) is sw
    with pytest.raises(InputError):
        stopword_list({"a", "the"})
