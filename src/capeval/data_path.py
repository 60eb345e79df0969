"""Where the team's shared data lives: ``$CAPEVAL_DATA``, else ``../shared/data`` if present."""
from __future__ import annotations

import os
from pathlib import Path


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
