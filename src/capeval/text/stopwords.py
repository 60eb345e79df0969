"""Stop-word lists by name, so a metric can say exactly which list it removed.

Names
-----
``nltk-153``   NLTK's English list as the coco-caption WMD scorer ships it (153 words; the list
               Kilickaya et al.'s WMD used). Alias ``nltk-2018``. Shipped in ``data/``.
``nltk-179``   the same plus NLTK's 26 apostrophe forms (``don't``...). Shipped.
``nltk-data``  whatever ``nltk.corpus.stopwords.words('english')`` returns on this machine
               (needs nltk and its data; the length is version-dependent and is recorded).
``spacy``      ``spacy.lang.en.stop_words.STOP_WORDS`` (326 words in spaCy 3.x).
``sklearn``    ``sklearn.feature_extraction.text.ENGLISH_STOP_WORDS`` (318 words).
``none``       no stop words.
any path       a UTF-8 file of whitespace-separated words (recorded by content hash).

Provenance of the shipped files: ``data/STOPWORDS_PROVENANCE.txt``.
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import InputError, ResourceNotFound

DEFAULT = "nltk-153"

_SHIPPED = {"nltk-153": "nltk_english_153.txt", "nltk-179": "nltk_english_179.txt"}
_ALIASES = {"nltk-2018": "nltk-153", "nltk": "nltk-153"}


@dataclass(frozen=True)
class StopwordList:
    """A named set of stop words; ``id`` is what signatures record (``stop:<id>``)."""

    name: str
    words: frozenset[str]
    id: str

    def __contains__(self, word: object) -> bool:
        return word in self.words

    def __len__(self) -> int:
        return len(self.words)


def available_stopwords() -> list[str]:
    return [*_SHIPPED, "nltk-data", "spacy", "sklearn", "none"]


def _shipped(name: str) -> StopwordList:
    text = resources.files("capeval.text").joinpath("data").joinpath(_SHIPPED[name]).read_text("utf-8")
    return StopwordList(name, frozenset(text.split()), name)


def _nltk_data() -> StopwordList:
    try:
        from nltk.corpus import stopwords
    except ImportError:
        raise ResourceNotFound(
            "stop-word list 'nltk-data' needs nltk (pip install nltk) and its data "
            "(python -m nltk.downloader stopwords); 'nltk-153' is shipped and needs neither"
        ) from None
    try:
        words = stopwords.words("english")
    except LookupError:
        raise ResourceNotFound(
            "stop-word list 'nltk-data': NLTK's stopwords corpus is not installed "
            "(python -m nltk.downloader stopwords); 'nltk-153' and 'nltk-179' are shipped"
        ) from None
    import nltk

    # The corpus has grown across releases, so the length is part of the identity.
    return StopwordList("nltk-data", frozenset(words), f"nltk-data-{len(set(words))}@nltk-{nltk.__version__}")


def _spacy() -> StopwordList:
    try:
        from spacy.lang.en.stop_words import STOP_WORDS
        import spacy
    except ImportError:
        raise ResourceNotFound("stop-word list 'spacy' needs spaCy: pip install spacy") from None
    return StopwordList("spacy", frozenset(STOP_WORDS), f"spacy-{len(STOP_WORDS)}@{spacy.__version__}")


def _sklearn() -> StopwordList:
    try:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
        import sklearn
    except ImportError:
        raise ResourceNotFound(
            "stop-word list 'sklearn' needs scikit-learn: pip install scikit-learn"
        ) from None
    return StopwordList(
        "sklearn", frozenset(ENGLISH_STOP_WORDS), f"sklearn-{len(ENGLISH_STOP_WORDS)}@{sklearn.__version__}"
    )


def _from_file(path: Path) -> StopwordList:
    data = path.read_bytes()
    try:
        words = frozenset(data.decode("utf-8").split())
    except UnicodeDecodeError as exc:
        raise InputError(f"stop-word file {path} is not UTF-8: {exc}") from None
    return StopwordList(str(path), words, f"file-{len(words)}-{hashlib.sha256(data).hexdigest()[:12]}")


@functools.lru_cache(maxsize=None)
def get_stopwords(name: str = DEFAULT) -> StopwordList:
    """The stop-word list called ``name`` (see the module docstring), or one read from a file."""
    key = _ALIASES.get(name, name)
    if key in _SHIPPED:
        return _shipped(key)
    if key == "none":
        return StopwordList("none", frozenset(), "none")
    if key == "nltk-data":
        return _nltk_data()
    if key == "spacy":
        return _spacy()
    if key == "sklearn":
        return _sklearn()
    path = Path(name).expanduser()
    if path.is_file():
        return _from_file(path)
    raise InputError(
        f"unknown stop-word list {name!r}: choose one of {available_stopwords()} or give a file path"
    )


def stopword_list(value: "str | StopwordList") -> StopwordList:
    """Accept a name, a path or an already-built list (what metric options receive)."""
    if isinstance(value, StopwordList):
        return value
    if not isinstance(value, str):
        raise InputError(f"stopwords must be a list name or a file path, got {type(value).__name__}")
    return get_stopwords(value)
