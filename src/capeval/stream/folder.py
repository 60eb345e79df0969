"""A run folder's file-system side: who owns it, its lock, its private key file, and the df
table written without a sparse memory map (docs/RELIABILITY.md, "Run folders")."""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import numpy as np

from ..errors import InputError

LOCK = "run.lock"


def check_owner(folder: Path) -> None:
    """A run folder's files decide what a run outputs: it must be this user's own directory,
    writable by no one else (else anyone who can write there can change the numbers)."""
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return
    fix = "delete it, or choose another run_dir (CLI: another --output)"
    if stat.S_ISLNK(st.st_mode):
        raise InputError(f"{folder}: the run folder is a symbolic link; a run folder must be a directory of its "
                         f"own ({fix})")
    if not stat.S_ISDIR(st.st_mode):
        raise InputError(f"{folder}: the run folder exists and is not a directory ({fix})")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise InputError(f"{folder}: the run folder belongs to user id {st.st_uid}, not to this user "
                         f"({os.getuid()}); a run reads back only a folder of its own ({fix})")
    if st.st_mode & 0o022:
        raise InputError(f"{folder}: the run folder is writable by other users (mode {stat.S_IMODE(st.st_mode):o}); "
                         f"a run reads back only a folder no one else can write (chmod 700 it, or {fix})")


def lock(folder: Path) -> int | None:
    try:
        import fcntl
    except ImportError:  # no flock (Windows): the owner check still holds
        return None
    path = folder / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise InputError(f"{folder}: another run is using this run folder (it holds {path.name}); wait for it "
                         "to end, or give this run another output or run_dir. Two runs never share one folder")
    except BaseException:
        os.close(fd)
        raise
    return fd




def write_private(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _npy_start(f, dtype: np.dtype, shape: tuple[int, ...]) -> None:
    """The ``.npy`` header of a C-order array, and its data's space reserved on disk, so that a
    full disk fails here (ENOSPC) rather than in a later write or a memory map."""
    from numpy.lib import format as npy

    npy.write_array_header_1_0(f, {"descr": npy.dtype_to_descr(dtype), "fortran_order": False, "shape": shape})
    size = f.tell() + int(np.prod(shape)) * dtype.itemsize
    f.flush()
    if hasattr(os, "posix_fallocate") and size > f.tell():
        try:
            os.posix_fallocate(f.fileno(), 0, size)
        except OSError as e:
            if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                raise
            # a file system that cannot reserve: the writes below still fail by name


def write_table(folder: Path, keys: list[np.ndarray], counts: list[np.ndarray], total: int) -> tuple[Path, Path]:
    """Buckets of (N, 2) uint64 keys and their uint32 counts written as a (2, N) key table and a
    count column, under temporary names in ``folder`` (returned). Each bucket is freed once
    written (the lists are emptied). A full disk is an :class:`~capeval.errors.OutputError`
    naming the folder, with nothing left behind."""
    keys_tmp, counts_tmp = folder / f".df-keys.tmp-{os.getpid()}.npy", folder / f".df-counts.tmp-{os.getpid()}.npy"
    key_dtype = np.dtype(np.uint64)
    try:
        with open(keys_tmp, "wb") as fk, open(counts_tmp, "wb") as fc:
            _npy_start(fk, key_dtype, (2, total))
            _npy_start(fc, np.dtype(np.uint32), (total,))
            for b in range(len(keys)):
                np.ascontiguousarray(keys[b][:, 0]).tofile(fk)
                np.ascontiguousarray(counts[b]).tofile(fc)
                counts[b] = np.zeros(0, dtype=np.uint32)  # free as we go
            for b in range(len(keys)):
                np.ascontiguousarray(keys[b][:, 1]).tofile(fk)
                keys[b] = np.zeros((0, 2), dtype=key_dtype)
            fk.flush()
            fc.flush()
    except OSError as e:
        keys_tmp.unlink(missing_ok=True)
        counts_tmp.unlink(missing_ok=True)
        from ..errors import OutputError

        raise OutputError(f"{folder}: the df of the input ({total:,} n-grams, {20 * total:,} bytes) could not be "
                          f"written to the run folder: {e.strerror or e}. Free space there, or choose a run "
                          "folder on another disk (run_dir)") from None
    return keys_tmp, counts_tmp
