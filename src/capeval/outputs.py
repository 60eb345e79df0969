"""Output files: written atomically, never over an input, never over an existing file unless asked.

Every file capeval writes goes to a temporary name in the target's own folder, is flushed to
disk (fsync) and renamed over the target (``os.replace``), so a full disk, a crash or a kill
leaves the previous file or no file, never a truncated one; the temporary is removed when the
write fails. The folder is created when missing.

:func:`check_outputs` is the command line's overwrite policy, checked before any work so a
refused command writes nothing:

- an output that is the same file as an input (same path, a symlink or a hard link) is
  refused, even with ``--overwrite``;
- two outputs of one command that are the same file are refused;
- an output that exists already, the named file or a file written beside it (the
  ``<name>.signatures.json`` of a row file), is refused unless ``--overwrite``; the error names
  every such file and the output it belongs to;
- an output that is not a regular file (a character or block device such as ``/dev/null``, a
  FIFO, a socket) is refused, with ``--overwrite`` too: the rename would replace the device
  node itself with a regular file. :func:`atomic_path` refuses them as well, for API callers;
- an output whose folder does not exist is refused unless ``--mkdirs``: a typo in a path
  (``-o /reslts/x.json``) must not create folders silently. The error names every such folder
  and the output it was meant for.

A streamed run (``capeval score`` with row-file output) assembles its output only at the end; a
run killed midway leaves no output and its resumable run folder ``<output>.capeval-run``, so the
same command resumes without ``--overwrite``.
"""
from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from .errors import OutputError


def _fsync_path(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def _fsync_dir(folder: Path) -> None:
    # Makes the rename itself durable; not every platform or file system allows it.
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def temp_path(path: str | Path) -> Path:
    """A fresh hidden name beside ``path`` that keeps its suffix (writers that pick a format
    from the suffix, such as matplotlib, still do)."""
    path = Path(path)
    return path.with_name(f".{path.stem}.tmp-{os.getpid()}-{secrets.token_hex(4)}{path.suffix}")


def special_file(path: str | Path) -> str | None:
    """What ``path`` is when it exists and is neither a regular file, a directory nor a
    symbolic link (renaming over a link replaces the link, not what it points to); else None."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    for test, what in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return None


def _refuse_special(path: Path, owner=None) -> None:
    what = special_file(path)
    if what is not None:
        shown = f"{path} (written beside {owner})" if owner is not None else str(path)
        raise OutputError(f"output {shown} is {what}; capeval writes only regular files and never replaces "
                          "anything else (--overwrite included). Write to a file, then copy it there")


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` to write; when the block ends without error the
    file is flushed to disk and renamed to ``path``, otherwise it is removed. A ``path`` that
    is a device, FIFO or socket is refused before anything is written."""
    path = Path(path)
    _refuse_special(path)
    tmp = temp_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_EXCL: never write through a file or link someone placed there; mode 0o666 minus the
        # umask, as a plain open() gives (mkstemp's 0600 would hide outputs from other users).
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except OSError as e:
        raise OutputError(f"could not write {path} ({e})") from e
    try:
        yield tmp
        _fsync_path(tmp)
        _refuse_special(path)  # one made while the output was being written
        os.replace(tmp, path)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError) and not isinstance(e, OutputError):
            raise OutputError(f"could not write {path} ({e}); "
                              + ("the previous file is unchanged" if os.path.lexists(path) else "nothing written")) from e
        raise
    _fsync_dir(path.parent)


@contextmanager
def atomic_open(path: str | Path, mode: str = "w", encoding: str | None = "utf-8",
                newline: str | None = None) -> Iterator[IO]:
    """``open(path, mode)`` for writing, committed atomically when the block ends without error."""
    if "b" in mode:
        encoding = None
    with atomic_path(path) as tmp, open(tmp, mode, encoding=encoding, newline=newline) as f:
        yield f


def atomic_write(path: str | Path, data: str | bytes, encoding: str = "utf-8") -> None:
    """Write ``data`` (text is encoded with ``encoding``) to ``path`` atomically."""
    raw = data.encode(encoding) if isinstance(data, str) else data
    with atomic_open(path, "wb") as f:
        f.write(raw)


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name one file: equal after resolving links, or (both existing) the
    same inode, which also catches hard links."""
    a, b = Path(a), Path(b)
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:
        pass
    try:
        return a.resolve() == b.resolve()
    except (RuntimeError, OSError):  # a symbolic-link loop: compare the paths as written
        return os.path.abspath(a) == os.path.abspath(b)


def missing_folders(outputs: Iterable[Path], out_dirs: Iterable[Path] = ()) -> dict[Path, Path]:
    """``{folder: output}`` for each output whose folder does not exist (the first output named
    for a folder). A folder in ``out_dirs`` is itself an output the command creates: only its
    parent must exist."""
    made = {Path(d).absolute() for d in out_dirs}
    out: dict[Path, Path] = {}
    for o in outputs:
        folder = Path(o).absolute().parent
        if folder in made:
            folder = folder.parent
        if not folder.is_dir():
            out.setdefault(folder, Path(o))
    return out


def check_outputs(outputs: Iterable[Path | tuple[Path, Path | None]], inputs: Iterable[Path | None] = (),
                  overwrite: bool = False, flag: str = "--overwrite", mkdirs: bool = False,
                  mkdirs_flag: str | None = None, out_dirs: Iterable[Path] = ()) -> None:
    """Apply the overwrite policy (module docstring) before a command does any work.

    ``outputs`` are the files the command will write: a path named on the command line, or a
    pair ``(file, output it is written beside)`` for a file such as a sidecar. ``inputs`` are
    the files the command reads (None entries are ignored). A missing folder is refused unless
    ``mkdirs`` (the command's option ``mkdirs_flag``, None when it has none); ``out_dirs`` are
    folders the command is asked to create (``--out-dir``), whose parent must exist. Raises
    :class:`OutputError`.
    """
    outs = [(Path(o[0]), o[1]) if isinstance(o, tuple) else (Path(o), None) for o in outputs]
    ins = [Path(i) for i in inputs if i is not None]
    if not mkdirs:
        gone = missing_folders([o for o, _ in outs], out_dirs)
        if gone:
            where = "; ".join(f"{folder} (for {o})" for folder, o in gone.items())
            them = "them" if len(gone) > 1 else "it"
            how = f"create {them} first" + (f", or pass {mkdirs_flag} to create {them}" if mkdirs_flag else "")
            raise OutputError(f"output folder{'s' if len(gone) > 1 else ''} not found: {where}. "
                              f"Check the path; {how}")

    def name(o: Path, owner) -> str:
        return f"{o} (written beside {owner})" if owner is not None else str(o)

    for o, owner in outs:
        for i in ins:
            if same_file(o, i):
                raise OutputError(f"output {name(o, owner)} is the input {i}; it would be overwritten. "
                                  "Write the output to another file")
        if o.is_dir():
            raise OutputError(f"output {name(o, owner)} is a directory")
        _refuse_special(o, owner)
    for k, (a, owner_a) in enumerate(outs):
        for b, owner_b in outs[k + 1:]:
            if same_file(a, b):
                raise OutputError(f"outputs {name(a, owner_a)} and {name(b, owner_b)} are the same file")
    existing = [name(o, owner) for o, owner in outs if os.path.lexists(o)]
    if existing and not overwrite:
        raise OutputError(f"output file{'s' if len(existing) > 1 else ''} already exist{'' if len(existing) > 1 else 's'}: "
                          f"{', '.join(existing)}. Pass {flag} to replace {'them' if len(existing) > 1 else 'it'}, "
                          "or choose another output name")


__all__ = ["atomic_path", "atomic_open", "atomic_write", "check_outputs", "missing_folders", "same_file", "special_file",
           "temp_path"]
