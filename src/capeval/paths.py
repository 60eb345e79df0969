"""Where capeval reads shared data and keeps its caches: the one home for both settings.

- data: ``$CAPEVAL_DATA``, else ``../shared/data`` if present (:func:`data_root`);
- caches (score cache, parses, converted METEOR/WordNet resources): ``$CAPEVAL_CACHE``, else
  ``$XDG_CACHE_HOME/capeval``, else ``~/.cache/capeval`` (:func:`cache_root`).
"""
from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "CAPEVAL_CACHE"


def cache_root() -> Path:
    """The root every capeval cache lives under; never inside the repository."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".cache") / "capeval"


def data_root(required: bool = False) -> Path | None:
    env = os.environ.get("CAPEVAL_DATA")
    if env:
        p = Path(env).expanduser()
        if p.is_dir():
            return p
        if required:
            raise FileNotFoundError(f"$CAPEVAL_DATA points to a missing directory: {p}")
        return None
    for base in (Path.cwd(), Path(__file__).resolve().parents[2]):
        p = (base / ".." / "shared" / "data").resolve()
        if p.is_dir():
            return p
    if required:
        raise FileNotFoundError(
            "benchmark data not found: set CAPEVAL_DATA to the data directory "
            "(or run `capeval data download`)"
        )
    return None
