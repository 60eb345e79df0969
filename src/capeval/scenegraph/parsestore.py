"""SPICE-py's on-disk caches, once per machine: caption text -> scene-graph tuples, and word ->
WordNet facts.

Parsing is SPICE-py's slow step, and references recur across systems and runs, so each
distinct text is parsed once per machine and parser. One SQLite file per *identity* holds the
JSON values of every key computed with it. For parses the identity (:func:`store_key`) is
everything besides the text that decides a text's tuples: spaCy's version, the pipeline (name,
version, path), the lemma-repair lexicon, and a digest of the source of the modules that turn a
parse into tuples, so editing a rule opens a new, empty file instead of reading stale tuples.
For words it is the WordNet database; loading WordNet takes seconds, and a run whose words
are all cached never loads it.
spaCy's parse of a text does not depend on the batch it was parsed in (checked on the shared
data when this cache was written), so a cached text has the tuples a fresh parse would give.

SQLite serialises writers from several processes (``--jobs``, parallel runs) and keeps a
half-written transaction invisible. A cache that cannot be opened or written (read-only home,
full disk) is reported in the scorer's stats and scoring goes on without it: the numbers do not
depend on it.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ..guards import CacheDamaged, kind_of
from ..paths import cache_root

FORMAT = 1
# Modules whose code maps a spaCy parse to tuples: a change to any of them changes the key.
_CODE_MODULES = ("annotate.py", "depgraph.py", "rules.py", "lemmas.py", "parser.py")
_BATCH = 500  # texts per SELECT (SQLite's bound-parameter limit is 999 in old builds)


def code_digest() -> str:
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for name in _CODE_MODULES:
        h.update(name.encode())
        h.update((here / name).read_bytes())
    return h.hexdigest()[:16]


def store_key(fields: dict) -> str:
    """The file name for one parser identity (``fields``: JSON-serialisable)."""
    blob = json.dumps({"format": FORMAT, "code": code_digest(), **fields}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:24]


def default_directory() -> Path:
    return cache_root() / "spice-py"


class DiskStore:
    """``get(keys)`` -> the cached JSON values among ``keys``; ``put(items)`` adds new ones."""

    def __init__(self, directory: str | Path, fields: dict):
        self.fields = dict(fields)
        self.path = Path(directory) / f"{store_key(self.fields)}.sqlite"
        self.error: str | None = None
        #: damaged rows dropped by this store (key and why), also warned about
        self.dropped: list[str] = []
        self._conn: sqlite3.Connection | None = None
        self._damaged: str | None = None

    def _connect(self) -> sqlite3.Connection | None:
        if self._conn is None and self.error is None:
            self._conn = self._open()
            if self._conn is None and self._damaged:  # not a database, or a FIFO or device in its place
                self.error = None
                self._drop_file(self._damaged)
                self._conn = self._open()
        return self._conn

    def _drop_file(self, why: str) -> None:
        """Delete a store SQLite cannot read (it is rebuilt as texts are parsed again)."""
        warnings.warn(f"SPICE-py cache {self.path}: {why}; dropped, its values are recomputed", CacheDamaged,
                      stacklevel=5)
        self.dropped.append(f"the whole store: {why}")
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(f"{self.path}{suffix}")
            except OSError:
                pass

    def _open(self) -> sqlite3.Connection | None:
        self._damaged = None
        kind = kind_of(self.path)
        if kind.startswith("a ") and kind != "a regular file":  # not "missing" nor "unreadable (...)"
            # SQLite would block on a FIFO and read a device until memory runs out.
            self._damaged = f"is {kind}, not a regular file"
            return None
        conn = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=120, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL) "
                         "WITHOUT ROWID")
            conn.execute("CREATE TABLE IF NOT EXISTS identity (fields TEXT NOT NULL)")
            if conn.execute("SELECT count(*) FROM identity").fetchone()[0] == 0:
                with conn:
                    conn.execute("INSERT INTO identity VALUES (?)", (json.dumps(self.fields, sort_keys=True),))
            return conn
        except (OSError, sqlite3.Error) as exc:
            if conn is not None:
                conn.close()
            self.error = f"{self.path}: {exc}"
            if _corrupt(exc):
                self._damaged = f"not a readable SQLite database ({exc})"
            return None

    def get(self, texts: Sequence[str]) -> dict[str, object]:
        conn = self._connect()
        if conn is None or not texts:
            return {}
        texts = [t for t in texts if storable(t)]
        keys, blobs = [], []
        try:
            for i in range(0, len(texts), _BATCH):
                part = texts[i:i + _BATCH]
                rows = conn.execute(f"SELECT key, value FROM kv WHERE key IN ({','.join('?' * len(part))})",
                                    part).fetchall()
                for k, v in rows:
                    keys.append(k)
                    blobs.append(v)
        except sqlite3.Error as exc:
            self.error = f"{self.path}: {exc}"
            if _corrupt(exc):
                self._drop_file(f"not a readable SQLite database ({exc})")
                self.error = None
            return {}
        return self._decode(conn, zip(keys, blobs))

    def items(self) -> dict[str, object]:
        """Every cached key and value (small stores read whole)."""
        conn = self._connect()
        if conn is None:
            return {}
        try:
            rows = conn.execute("SELECT key, value FROM kv").fetchall()
        except sqlite3.Error as exc:
            self.error = f"{self.path}: {exc}"
            return {}
        return self._decode(conn, rows)

    def _decode(self, conn: sqlite3.Connection, rows: Iterable[tuple[str, str]]) -> dict[str, object]:
        """Each row's value decoded on its own and checked against the store's shape: joining
        values into one JSON document let one edited value shift every later text's tuples. A
        damaged row is deleted (its text is parsed again and stored anew) with a note."""
        check = SHAPES.get(self.fields.get("kind"), _any_json)
        out: dict[str, object] = {}
        bad: list[str] = []
        for k, v in rows:
            try:
                if not isinstance(v, str) or len(v) > MAX_VALUE_CHARS:
                    raise ValueError(f"a value of {len(v) if isinstance(v, str) else type(v).__name__} characters")
                value = json.loads(v)
                if not check(value):
                    raise ValueError(f"not the shape of a {self.fields.get('kind')} value")
            except (ValueError, RecursionError) as e:
                bad.append(k)
                why = str(e) if not isinstance(e, RecursionError) else "nested too deeply"
                self.dropped.append(f"{k[:60]!r}: {why[:120]}")
                continue
            out[k] = value
        if bad:
            warnings.warn(f"SPICE-py cache {self.path}: {len(bad)} damaged row(s) dropped and recomputed "
                          f"(first: {self.dropped[-len(bad)]})", CacheDamaged, stacklevel=4)
            try:
                with conn:
                    conn.executemany("DELETE FROM kv WHERE key = ?", [(k,) for k in bad])
            except sqlite3.Error as exc:
                self.error = f"{self.path}: {exc}"
        return out

    def put(self, items: Iterable[tuple[str, object]]) -> None:
        conn = self._connect()
        if conn is None:
            return
        rows = [(k, json.dumps(v, ensure_ascii=False, separators=(",", ":"))) for k, v in items if storable(k)]
        if not rows:
            return
        try:
            with conn:
                conn.executemany("INSERT OR IGNORE INTO kv VALUES (?, ?)", rows)
        except sqlite3.Error as exc:
            self.error = f"{self.path}: {exc}"

    def __getstate__(self):  # a forked or pickled copy opens its own connection
        return {**self.__dict__, "_conn": None}

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _words(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(w, str) for w in value)


def _parse_tuples(value: object) -> bool:
    """A text's tuples: objects, attributes and relations of 1 to 3 words each."""
    return isinstance(value, list) and all(_words(t) and 1 <= len(t) <= 3 for t in value)  # type: ignore[arg-type]


def _wordnet_facts(value: object) -> bool:
    """A word's facts: is a verb, is known, its synset names."""
    return (isinstance(value, list) and len(value) == 3 and isinstance(value[0], bool)
            and isinstance(value[1], bool) and _words(value[2]))


def _any_json(value: object) -> bool:
    return True


#: What a value of each kind of store must look like.
SHAPES: dict[object, Callable[[object], bool]] = {"spacy-parses": _parse_tuples, "wordnet-facts": _wordnet_facts}
#: A stored value (the tuples of one caption, capped at 20,000 characters, fit many times over).
MAX_VALUE_CHARS = 1 << 20


def _corrupt(exc: BaseException) -> bool:
    """Whether SQLite says the file is not a database or is malformed (not locked, not full)."""
    return getattr(exc, "sqlite_errorname", "") in ("SQLITE_NOTADB", "SQLITE_CORRUPT")


def storable(text: str) -> bool:
    """SQLite stores UTF-8: a key holding a lone surrogate is computed each time, never cached."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
