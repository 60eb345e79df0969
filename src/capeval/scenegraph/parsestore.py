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
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

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
        self._conn: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection | None:
        if self._conn is None and self.error is None:
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
                self._conn = conn
            except (OSError, sqlite3.Error) as exc:
                self.error = f"{self.path}: {exc}"
        return self._conn

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
            return {}
        # One JSON document for all rows: one C-level parse instead of one call per text.
        lists = json.loads("[" + ",".join(blobs) + "]")
        return dict(zip(keys, lists))

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
        return dict(zip([k for k, _ in rows], json.loads("[" + ",".join(v for _, v in rows) + "]")))

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


def storable(text: str) -> bool:
    """SQLite stores UTF-8: a key holding a lone surrogate is computed each time, never cached."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
