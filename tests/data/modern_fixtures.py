"""A data root built from the THumB / Nebula / Polaris fixture files (tests/data/fixtures), in
the official formats, a few rows each. The real files are held-out evaluation sets and never
enter the repository; the packaged manifest keeps their pinned checksums, and
:func:`pin_fixtures` points the checksum lookups at the fixtures' own digests instead."""
from __future__ import annotations

import shutil
from pathlib import Path

from capeval.data import checksums
from capeval.digests import sha256_file

FIXTURES = Path(__file__).with_name("fixtures")


def fixture_root(tmp_path: Path, *folders: str) -> Path:
    root = tmp_path / "data"
    for folder in folders:
        shutil.copytree(FIXTURES / folder, root / folder)
    return root


def pin_fixtures(monkeypatch, root: Path) -> dict:
    """The packaged manifest with the fixture folders' pinned files replaced by the digests of
    the copies under ``root``, as if capeval shipped those."""
    real = checksums.packaged_manifest()
    patched = {folder: dict(files) for folder, files in real.items()}
    for folder in ("thumb", "nebula", "polaris"):
        for rel in real[folder]:
            if (root / folder / rel).is_file():
                patched[folder][rel] = sha256_file(root / folder / rel)
    monkeypatch.setattr(checksums, "packaged_manifest", lambda: patched)
    return patched


def pinned_root(tmp_path: Path, monkeypatch, *folders: str) -> Path:
    """:func:`fixture_root` of ``folders`` with :func:`pin_fixtures` applied, and a cache of
    its own under ``tmp_path`` so no test reads or writes the user's."""
    root = fixture_root(tmp_path, *folders)
    pin_fixtures(monkeypatch, root)
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    return root
