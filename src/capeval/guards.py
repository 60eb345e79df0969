"""The guards of outside input: one guarded door per kind of input.

Every surface that reads something from outside (a file named on the command line, a value a
user's code returns, a cache entry, a plug-in) goes through the door of its kind, so a new
surface gets every guard by calling it. Each door refuses with an :class:`InputError` (exit
status 2 on the command line) that names the item; none lets a raw ``RecursionError``,
``OverflowError``, ``MemoryError`` or a third-party exception through. docs/RELIABILITY.md
("Doors") lists the limits; ``tests/test_hostile_inputs.py`` runs every hostile input against
every surface.

Kinds:

* files: :func:`open_regular` / :func:`read_regular` / :func:`text_lines` -- regular files only
  (a device, FIFO or socket is refused by name before it is read), with a size limit, read in
  lines where large;
* JSON: :func:`loads_json` -- nesting depth, integer size (|n| <= 2**53, the largest integer a
  float holds exactly), no key twice in one object and, through the file door, document size;
* numbers: :func:`parse_number` / :func:`parse_id` -- one parser for scores, ratings and ids;
* images: :func:`check_image_size` -- pixel count and aspect ratio before anything is decoded;
* directory walks: :func:`walk_files` -- cycle-safe; :func:`confined_name` -- what an ``image``
  field may name under ``--images``;
* pickles: :func:`prescan_pickle` -- opcode pre-scan (nesting depth, decoded size, integer
  size) before anything is unpickled;
* cache entries: :func:`cache_entry_name` / :func:`read_cache_entry` -- named by their digest,
  dropped (with a note) when damaged; :class:`CacheFolder` -- one manifest per cache, foreign
  and duplicate entries dropped;
* plug-ins: :func:`contained` -- every ``BaseException`` but ``KeyboardInterrupt`` is caught.
"""
from __future__ import annotations

import codecs
import hashlib
import io
import json
import math
import numbers
import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Self

from .errors import InputError

# ----------------------------------------------------------------------------------- limits

#: The largest integer any capeval file or value may hold: every count, id and score is used as
#: a float somewhere, and above 2**53 a float no longer holds each integer exactly.
MAX_EXACT_INT = 2 ** 53
#: Nesting of arrays and objects in a JSON value (capeval's files nest 3 deep at most).
MAX_JSON_DEPTH = 64
#: A whole JSON document read into memory (COCO results and annotations, df files).
MAX_JSON_BYTES = 1 << 30
#: A caption table read into memory (``score -i`` without ``--stream``).
MAX_TABLE_BYTES = 1 << 30
#: A scores file (``--scores``): about 6 million ids, far above any benchmark.
MAX_SCORES_BYTES = 256 << 20
#: One line of a JSONL or CSV file.
MAX_LINE_BYTES = 64 << 20
#: A pickle (``compat convert-cider-df``), and what its strings decode to in all (a string
#: referenced twice counts twice: a memo reference is a copy once the n-grams are joined).
MAX_PICKLE_BYTES = 1 << 30
MAX_PICKLE_DECODED = 512 << 20
MAX_PICKLE_DEPTH = 64
#: What a pickle's objects take in memory once built, estimated from its opcodes (every object,
#: every element and every memo reference counted): a 3-tuple of memo references costs 9 bytes
#: of pickle and about 200 in memory, so the byte limit alone let a 1 GiB file need tens of GB.
MAX_PICKLE_EXPANDED = 2 << 30
#: Estimated bytes per object built by the unpickler (a container adds 8 bytes per element, a
#: dict or set element 40 more for its hash-table slot and growth; strings' text is ``total``).
_OBJ_BYTES, _ITEM_BYTES, _SLOT_BYTES = 56, 8, 40
#: One image file, its pixels, and the ratio of its long side to its short side: CLIP's
#: preprocessing resizes the short side to n_px first, so a 1x40000 image would become
#: 224 x 8,960,000 pixels before the crop.
MAX_IMAGE_BYTES = 256 << 20
MAX_IMAGE_PIXELS = 1 << 27
MAX_IMAGE_ASPECT = 100


#: Bytes read at once from a file that grew after it was opened.
_READ_BLOCK = 1 << 24


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MiB"


# ------------------------------------------------------------------------------------ files

_KINDS = ((stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"), (stat.S_ISFIFO, "FIFO (named pipe)"),
          (stat.S_ISSOCK, "socket"), (stat.S_ISDIR, "directory"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "special file")


def kind_of(path: str | Path) -> str:
    """What ``path`` is, for a message: "a directory", "a character device", "a FIFO (named
    pipe)", "a regular file", "missing", or why it cannot be examined."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "missing"
    except OSError as e:
        return f"unreadable ({e.strerror or e})"
    return "a regular file" if stat.S_ISREG(st.st_mode) else f"a {_kind(st.st_mode)}"


def open_regular(path: str | Path, what: str, max_bytes: int) -> BinaryIO:
    """``path`` opened for binary reading once it is known to be a regular file of at most
    ``max_bytes`` bytes. Opened non-blocking and checked on the open descriptor, so a FIFO (or a
    file swapped for one) is refused at once instead of blocking, and a device is refused
    instead of read until memory runs out."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"{what} not found: {p}") from None
    except OSError as e:
        raise InputError(f"{what} {p} cannot be read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{what} {p} is a {_kind(st.st_mode)}, not a regular file; capeval reads "
                             "inputs only from regular files")
        if st.st_size > max_bytes:
            raise InputError(f"{what} {p} has {st.st_size:,} bytes, over the limit of {_mib(max_bytes)}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | Path, what: str, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_regular`); a file that grows past the
    limit while it is read is refused too."""
    with open_regular(path, what, max_bytes) as f:
        # ``f.read(max_bytes + 1)`` would reserve the whole limit (1 GiB) for a file of a few
        # bytes; read what the file holds, then in bounded blocks only while it keeps growing.
        size = os.fstat(f.fileno()).st_size
        parts = [f.read(size + 1)]
        total = len(parts[0])
        while total > size and total <= max_bytes:
            block = f.read(min(_READ_BLOCK, max_bytes + 1 - total))
            if not block:
                break
            parts.append(block)
            total += len(block)
    if total > max_bytes:
        raise InputError(f"{what} {path} grew past the limit of {_mib(max_bytes)} while it was read")
    return parts[0] if len(parts) == 1 else b"".join(parts)


def utf8_error(path, data: bytes, e: UnicodeDecodeError, offset: int = 0) -> InputError:
    """The error for bytes that are not UTF-8: byte offset (from the file's start), line, bytes."""
    line = data[: e.start].count(b"\n") + 1
    return InputError(f"{path}: not valid UTF-8 (byte {offset + e.start}, line {line}: "
                      f"{data[e.start:e.start + 8]!r}). Re-encode the file as UTF-8.")


def decode_utf8(path, data: bytes) -> str:
    """UTF-8 text of a whole file, a leading BOM dropped."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise utf8_error(path, data, e) from None
    return text.removeprefix("\ufeff")


class _Hashing(io.RawIOBase):
    """A raw reader that feeds every byte it passes on to ``hasher``."""

    def __init__(self, f: BinaryIO, hasher):
        self.f, self.hasher = f, hasher

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.f.close()
        super().close()

    def readinto(self, b) -> int:
        n = self.f.readinto(b)  # type: ignore[attr-defined]
        if n:
            self.hasher.update(memoryview(b)[:n])
        return n or 0


def text_lines(path: str | Path, what: str, max_bytes: int, *, newline: str = "\n",
               hasher=None, max_line: int = MAX_LINE_BYTES) -> Iterator[str]:
    """The lines of a UTF-8 text file (leading BOM dropped), each with its ending, read as they
    are asked for: nothing holds the whole file. ``newline="\\n"`` ends lines at ``\\n`` only
    (JSONL: a U+2028 or a lone CR inside a caption stays in its line); ``newline=""`` reads
    universal newlines untranslated, as the csv module wants. A line longer than ``max_line``
    bytes and bytes that are not UTF-8 are errors naming the line. ``hasher`` (a hashlib
    object) sees every byte read."""
    f = open_regular(path, what, max_bytes)
    raw: BinaryIO = f if hasher is None else io.BufferedReader(_Hashing(f, hasher), 1 << 16)  # type: ignore[assignment]
    text = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", newline=newline)
    lineno = 0
    try:
        while True:
            try:
                line = text.readline(max_line + 1)
            except UnicodeDecodeError:
                raise _locate_utf8_error(path) from None
            if not line:
                return
            lineno += 1
            if len(line) > max_line and not line.endswith(("\n", "\r")):
                raise InputError(f"{path}:{lineno}: a line over {_mib(max_line)}; lines of capeval inputs "
                                 "are limited to that")
            if lineno == 1 and line.startswith("\ufeff"):
                line = line[1:]
            yield line
    finally:
        text.close()


class BoundedLines:
    """The lines of a binary file (``readline`` and iteration), each at most ``max_line`` bytes:
    a longer one (a device, or a file without line breaks) is an error naming its line, not a
    read until memory runs out."""

    def __init__(self, f: BinaryIO, path, max_line: int = MAX_LINE_BYTES):
        self.f, self.path, self.max_line, self.lineno = f, path, max_line, 0

    def readline(self) -> bytes:
        line = self.f.readline(self.max_line + 1)
        if line:
            self.lineno += 1
            if len(line) > self.max_line and not line.endswith(b"\n"):
                raise InputError(f"{self.path}:{self.lineno}: a line over {_mib(self.max_line)}; lines of capeval "
                                 "inputs are limited to that")
        return line

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.readline, b"")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.f.close()


def open_lines(path: str | Path, what: str, max_bytes: int = 1 << 62) -> BoundedLines:
    """A regular file's lines, each bounded (:class:`BoundedLines`); for streamed inputs, which
    have no size limit. Close it with ``.f.close()`` or use it as a context manager."""
    return BoundedLines(open_regular(path, what, max_bytes), path)


def _locate_utf8_error(path) -> InputError:
    """Byte offset and line of the first bytes of ``path`` that are not UTF-8 (read again in
    blocks: the text reader only knows its own buffer)."""
    dec = codecs.getincrementaldecoder("utf-8")("strict")
    offset, lines = 0, 0
    with open(path, "rb") as f:
        while True:
            block = f.read(1 << 20)
            pending = dec.getstate()[0]  # the start of a character split across blocks
            try:
                dec.decode(block, final=not block)
            except UnicodeDecodeError as e:
                buf = pending + block  # what the decoder saw, and what e.start counts in
                line = lines + buf[:e.start].count(b"\n") + 1
                return InputError(f"{path}: not valid UTF-8 (byte {offset - len(pending) + e.start}, line "
                                  f"{line}: {buf[e.start:e.start + 8]!r}). "
                                  "Re-encode the file as UTF-8.")
            if not block:
                return InputError(f"{path}: not valid UTF-8. Re-encode the file as UTF-8.")
            offset += len(block)
            lines += block.count(b"\n")


# ------------------------------------------------------------------------------------- JSON

class _IntTooLarge(Exception):
    def __init__(self, digits: int):
        self.digits = digits


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > 16:  # caught before int() of a 4,300-digit string raises ValueError
        raise _IntTooLarge(digits)
    n = int(text)
    if abs(n) > MAX_EXACT_INT:
        raise _IntTooLarge(digits)
    return n


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads keeps the last of two equal keys without a word, so a file could say two
    # things and be read as one of them; a document that does is refused.
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


def _too_deep(obj, limit: int) -> bool:
    stack = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, (dict, list)))
    return False


def loads_json(text: str | bytes, where: str, *, parse_constant: Callable[[str], Any] | None = None,
               max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` with the JSON door's limits: integers up to 2**53 in magnitude, nesting up
    to ``max_depth``, each key once per object. Errors name ``where`` (a file, or ``file:line``)."""
    kw: dict[str, Any] = {"parse_int": _bounded_int, "object_pairs_hook": _unique_keys}
    if parse_constant is not None:
        kw["parse_constant"] = parse_constant
    try:
        obj = json.loads(text, **kw)
    except _IntTooLarge as e:
        raise InputError(f"{where}: unreadable JSON (an integer of {e.digits} digits; integers in capeval "
                         "files are limited to 2**53 in magnitude)") from None
    except _DuplicateKey as e:
        key = json.dumps(e.key[:80]) + ("..." if len(e.key) > 80 else "")
        raise InputError(f"{where}: invalid JSON (the key {key} appears twice in one object)") from None
    except RecursionError:
        raise InputError(f"{where}: unreadable JSON (nested deeper than {max_depth} arrays or objects)") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{where}: invalid JSON ({e.msg}; line {e.lineno} column {e.colno})") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(f"{where}: unreadable JSON ({e})") from None
    if isinstance(obj, (dict, list)) and _too_deep(obj, max_depth):
        raise InputError(f"{where}: unreadable JSON (nested deeper than {max_depth} arrays or objects)")
    return obj


def read_json_file(path: str | Path, what: str, max_bytes: int = MAX_JSON_BYTES) -> tuple[Any, bytes]:
    """A whole JSON document from a regular file, and its bytes (for a digest)."""
    data = read_regular(path, what, max_bytes)
    return loads_json(decode_utf8(path, data), str(path)), data


# ---------------------------------------------------------------------------------- numbers

#: A number as JSON writes it, with an optional leading ``+`` and a bare ``.5``/``5.`` also
#: accepted (spreadsheets write them). ASCII digits only: ``1_000`` (Python's digit grouping)
#: and ``٣`` (Arabic-Indic three), which ``float()`` would read, are refused, as JSON does.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_NONFINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


def parse_number(value: object, where: str, what: str = "score") -> float:
    """A finite float from a JSON number or a table cell; one parser for scores, ratings and
    ids given as numbers. Refused: booleans, null, containers, integers beyond 2**53, text that
    is not a plain decimal number (``1_000``, ``٣``, ``0x10``, ``high``), NaN and infinities."""
    if isinstance(value, str):
        text = value.strip()
        if _NONFINITE.fullmatch(text):
            raise InputError(f"{where}: {what} is {value!r}; {what}s must be finite (no NaN or inf)")
        if not _NUMBER.fullmatch(text):
            raise InputError(f"{where}: {what} {value!r} is not a number (plain decimal digits, as JSON writes "
                             "numbers)")
        f = float(text)
        if not math.isfinite(f):  # float() gives inf for a decimal past its range
            size = "" if "e" in text.lower() else f" (a number of {sum(c.isdigit() for c in text)} digits)"
            shown = repr(text) if len(text) <= 24 else repr(text[:24]) + "..."
            raise InputError(f"{where}: {what} {shown}{size} is past a float's range; {what}s must be finite")
    elif isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy's bool_ is not Real
        raise InputError(f"{where}: {what} {value!r:.80} is not a number")
    elif isinstance(value, numbers.Integral):
        if abs(int(value)) > MAX_EXACT_INT:
            raise InputError(f"{where}: {what} is an integer of {len(str(abs(int(value))))} digits; "
                             "integers are limited to 2**53 in magnitude")
        f = float(value)
    else:
        try:
            f = float(value)
        except (OverflowError, ValueError, TypeError):
            raise InputError(f"{where}: {what} {value!r:.80} is not a number") from None
    if not math.isfinite(f):
        raise InputError(f"{where}: {what} is {value!r:.80}; {what}s must be finite (no NaN or inf)")
    return f


def parse_id(value: object, where: str) -> str:
    """An id as text: a non-empty string, or an integer within 2**53 (read as its decimal form)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise InputError(f"{where}: id {value!r:.80} must be a non-empty string (as `capeval data export` writes)")
    if isinstance(value, int) and abs(value) > MAX_EXACT_INT:
        raise InputError(f"{where}: id is an integer of {len(str(abs(value)))} digits; integers are limited "
                         "to 2**53 in magnitude")
    return str(value)


# ----------------------------------------------------------------------------------- images

def check_image_size(width: int, height: int, name: str, nbytes: int | None = None) -> None:
    """Refuse an image whose pixels or aspect ratio would take memory out of proportion to its
    file, before it is decoded or resized."""
    size = f"{width}x{height} pixels" + (f", {nbytes:,} bytes" if nbytes is not None else "")
    if width < 1 or height < 1:
        raise InputError(f"image {name!r} ({size}) has no pixels")
    if width * height > MAX_IMAGE_PIXELS:
        raise InputError(f"image {name!r} ({size}) has {width * height:,} pixels, over the limit of "
                         f"{MAX_IMAGE_PIXELS:,}; resize it first")
    if max(width, height) > MAX_IMAGE_ASPECT * min(width, height):
        raise InputError(f"image {name!r} ({size}) is over {MAX_IMAGE_ASPECT} times longer than it is wide; "
                         "CLIP's preprocessing would scale its long side by the same factor as its short one")


def read_image_bytes(path: str | Path) -> bytes:
    """The bytes of an image file (a regular file of at most :data:`MAX_IMAGE_BYTES`)."""
    return read_regular(path, "image", MAX_IMAGE_BYTES)


# -------------------------------------------------------------------------- directory walks

def walk_files(root: Path) -> Iterator[Path]:
    """Every file below ``root``, following symbolic links to directories but entering each
    directory (by device and inode) once: a link back to ``.`` or to an ancestor is a cycle,
    not an endless tree. Unreadable directories are skipped."""
    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            st = d.stat()
        except OSError:
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:
            continue
        seen.add(key)
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        subdirs = []
        for e in entries:
            try:
                is_dir = e.is_dir(follow_symlinks=True)
            except OSError:
                is_dir = False
            if is_dir:
                subdirs.append(Path(e.path))
            else:
                yield Path(e.path)
        stack.extend(sorted(subdirs, reverse=True))


def confined_name(name: str, root: Path) -> str:
    """An ``image`` field as a path under ``--images``: relative, without ``..``. The input
    file names images; the folder decides what is in it -- symbolic links the folder holds are
    followed, so a dataset linked into it works, but a field cannot reach outside it."""
    p = Path(name)
    if p.is_absolute() or name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name):
        raise InputError(f"image {name!r} is an absolute path; with --images {root}, image fields name files "
                         "under that folder (relative paths or file names)")
    if ".." in re.split(r"[\\/]", name):
        raise InputError(f"image {name!r} leaves --images {root} ('..'); image fields name files under that folder")
    return name


# ---------------------------------------------------------------------------------- pickles

class _Cell:
    """What the pre-scan knows of one object on the unpickler's stack: its nesting depth and the
    size of the text it holds (strings counted once per reference)."""

    __slots__ = ("depth", "size")

    def __init__(self, depth: int = 0, size: int = 0):
        self.depth, self.size = depth, size


(_STR, _PUT, _GET, _TUPLEN, _SCALAR, _INT, _MARK, _ADD_MARKED, _FROM_MARK, _EMPTY, _SKIP, _STOP) = range(12)
_PICKLE_OP_KINDS: dict[str, int] = {
    **dict.fromkeys(("STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE",
                     "BINUNICODE8", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8"), _STR),
    **dict.fromkeys(("MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT"), _PUT),
    **dict.fromkeys(("GET", "BINGET", "LONG_BINGET"), _GET),
    **dict.fromkeys(("TUPLE1", "TUPLE2", "TUPLE3"), _TUPLEN),
    **dict.fromkeys(("NONE", "NEWTRUE", "NEWFALSE", "FLOAT", "BINFLOAT", "NEXT_BUFFER", "PERSID"), _SCALAR),
    **dict.fromkeys(("INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4"), _INT),
    "MARK": _MARK,
    **dict.fromkeys(("APPENDS", "ADDITEMS", "SETITEMS"), _ADD_MARKED),
    **dict.fromkeys(("TUPLE", "LIST", "DICT", "FROZENSET", "INST", "OBJ"), _FROM_MARK),
    **dict.fromkeys(("EMPTY_TUPLE", "EMPTY_LIST", "EMPTY_DICT", "EMPTY_SET"), _EMPTY),
    **dict.fromkeys(("PROTO", "FRAME", "READONLY_BUFFER"), _SKIP),
    "STOP": _STOP,
}


def prescan_pickle(data: bytes, where: str, *, max_depth: int = MAX_PICKLE_DEPTH,
                   max_decoded: int = MAX_PICKLE_DECODED, max_expanded: int = MAX_PICKLE_EXPANDED) -> None:
    """Walk the opcodes of ``data`` without building anything, simulating the unpickler's stack
    with one :class:`_Cell` per object, and refuse (naming ``where``) a pickle whose objects
    would nest deeper than ``max_depth`` (hashing a 200,000-deep tuple crashes the interpreter),
    whose strings add up to more than ``max_decoded`` bytes counting every reference (a 1 MiB
    word put in the memo and reused 2,000 times), whose objects would take more than
    ``max_expanded`` bytes in memory (5,000,000 tuples of memo references: 45 MB of pickle,
    1.4 GB once read), or that holds an integer beyond 2**53."""
    import pickletools

    stack: list[Any] = []
    memo: dict[int, _Cell] = {}
    mark = object()
    marks: list[int] = []
    total = 0
    objects = 0  # estimated bytes of the objects built (strings' text counted in ``total``)

    def over() -> InputError:
        return InputError(f"{where}: the pickle would take about {_mib(objects + total)} in memory once read "
                          f"(its objects and every memo reference counted), over the limit of {_mib(max_expanded)}; "
                          "not a CIDEr df file capeval converts. Refused before unpickling it")

    def push(cell: _Cell) -> None:
        if cell.depth > max_depth:
            raise InputError(f"{where}: the pickle nests objects deeper than {max_depth}; not a CIDEr df file. "
                             "Refused before unpickling it")
        stack.append(cell)

    def pop() -> _Cell:
        if not stack or stack[-1] is mark:
            raise InputError(f"{where}: not a readable pickle (stack underflow)")
        return stack.pop()

    def pop_mark() -> list[_Cell]:
        if not marks:
            raise InputError(f"{where}: not a readable pickle (no mark)")
        k = marks.pop()
        items = stack[k + 1:]
        del stack[k:]
        return items

    def build(items: list[_Cell], into: _Cell | None = None, slots: bool = False) -> _Cell:
        nonlocal total, objects
        c = into if into is not None else _Cell(1, 0)
        objects += (0 if into is not None else _OBJ_BYTES) + len(items) * (_ITEM_BYTES + (_SLOT_BYTES if slots else 0))
        if objects + total > max_expanded:
            raise over()
        for it in items:
            c.depth = max(c.depth, it.depth + 1)
            c.size += it.size
            if it.size:
                total += it.size
        if c.depth > max_depth:
            raise InputError(f"{where}: the pickle nests objects deeper than {max_depth}; not a CIDEr df file. "
                             "Refused before unpickling it")
        if total > max_decoded:
            raise InputError(f"{where}: the pickle's strings add up to over {_mib(max_decoded)} counting every "
                             "reference (memo reuse); not a CIDEr df file. Refused before unpickling it")
        return c

    try:
        kinds = _PICKLE_OP_KINDS
        for op, arg, _pos in pickletools.genops(data):
            kind = kinds.get(op.name)
            # The frequent opcodes of a df pickle first: strings, memo, small tuples, numbers.
            if kind == _STR:
                stack.append(_Cell(0, len(arg) if arg is not None else 0))
                objects += _OBJ_BYTES
            elif kind == _PUT:
                if stack and stack[-1] is not mark:
                    memo[len(memo) if arg is None else int(str(arg))] = stack[-1]
            elif kind == _GET:
                cell = memo.get(int(str(arg)))
                if cell is None:
                    raise InputError(f"{where}: not a readable pickle (memo key {arg} unset)")
                push(cell)
            elif kind == _TUPLEN:
                n = int(op.name[-1])
                items = [pop() for _ in range(n)][::-1]
                push(build(items))
            elif kind == _SCALAR:
                stack.append(_Cell())
                objects += _OBJ_BYTES // 2
            elif kind == _INT:
                if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > MAX_EXACT_INT:
                    raise InputError(f"{where}: the pickle holds an integer of {len(str(abs(arg)))} digits; "
                                     "integers are limited to 2**53 in magnitude (as --cider-df reads them)")
                stack.append(_Cell())
                objects += _OBJ_BYTES // 2
            elif kind == _MARK:
                marks.append(len(stack))
                stack.append(mark)
            elif kind == _ADD_MARKED:  # APPENDS, ADDITEMS, SETITEMS
                items = pop_mark()
                target = pop()
                push(build(items, target, slots=op.name != "APPENDS"))
            elif kind == _FROM_MARK:  # TUPLE, LIST, DICT, FROZENSET, INST, OBJ
                push(build(pop_mark(), slots=op.name in ("DICT", "FROZENSET")))
            elif kind == _EMPTY:
                stack.append(_Cell(1))
                objects += _OBJ_BYTES
            elif kind == _SKIP:
                continue
            elif kind == _STOP:
                break
            elif op.name == "POP":
                pop()
            elif op.name == "DUP":
                push(stack[-1] if stack else _Cell())
            elif op.name == "POP_MARK":
                pop_mark()
            elif op.name == "BINPERSID":
                pop()
                push(_Cell())
            elif op.name == "APPEND":
                item = pop()
                target = pop()
                push(build([item], target))
            elif op.name == "SETITEM":
                v, k = pop(), pop()
                target = pop()
                push(build([k, v], target, slots=True))
            elif op.name == "GLOBAL":
                push(_Cell())
            elif op.name == "STACK_GLOBAL":
                pop(), pop()
                push(_Cell())
            elif op.name in ("REDUCE", "NEWOBJ"):
                args, fn = pop(), pop()
                push(build([fn, args]))
            elif op.name == "BUILD":  # the state is set on the object in place
                state, obj = pop(), pop()
                push(build([state], obj))
            elif op.name == "NEWOBJ_EX":
                kw, args, cls = pop(), pop(), pop()
                push(build([cls, args, kw]))
            elif op.name in ("EXT1", "EXT2", "EXT4"):
                push(_Cell())
            else:
                raise InputError(f"{where}: the pickle uses opcode {op.name}, which a CIDEr df file does not")
    except InputError:
        raise
    except (ValueError, IndexError, KeyError, AttributeError, TypeError) as e:
        # a truncated or malformed opcode stream (AttributeError: a mark used as an object)
        raise InputError(f"{where}: not a readable pickle ({type(e).__name__}: {e})") from None


# ------------------------------------------------------------------------------ cache entries

def cache_entry_name(data: bytes, suffix: str) -> str:
    """File name of a cache entry: the SHA-256 of its bytes, so reading it back checks it."""
    return hashlib.sha256(data).hexdigest()[:32] + suffix


def read_cache_entry(path: Path, on_damage: Callable[[str], None]) -> bytes | None:
    """The bytes of the cache entry ``path`` if they match the digest its name carries; else
    the entry is deleted (self-healing: the caller recomputes and writes a good one),
    ``on_damage`` is told why, and None is returned."""
    why = None
    try:
        data = read_regular(path, "cache entry", MAX_IMAGE_BYTES)
    except InputError as e:
        data, why = None, str(e)
    if data is not None and path.name != cache_entry_name(data, path.suffix):
        why = (f"cache entry {path} does not match the digest in its name (damaged, edited, or written by "
               "an older capeval)")
        data = None
    if data is None:
        try:
            path.unlink()
        except OSError:
            pass
        on_damage(f"{why}; dropped, its values are recomputed")
    return data


class CacheDamaged(UserWarning):
    """A cache entry was damaged, foreign to its cache, or a duplicate; it was dropped and its
    values are recomputed."""


#: The manifest of a :class:`CacheFolder`: one JSON line per entry, appended.
MANIFEST_NAME = "manifest.jsonl"
#: A cache manifest and each of its lines.
MAX_MANIFEST_BYTES = 64 << 20
MAX_MANIFEST_LINE = 4096


class CacheFolder:
    """A cache folder with one manifest: every entry is a file named by the SHA-256 of its bytes
    (:func:`cache_entry_name`, so reading it back checks it), and ``manifest.jsonl`` lists the
    entries that belong to the cache, one line ``{"entry": name, "key": key}`` each (``key``
    for caches that hold one value per entry). Reading drops, with a note (:class:`CacheDamaged`
    through ``note``): a file the manifest does not list (foreign: another shard with the same
    image keys, say), a key listed with two different entries (duplicate), an entry whose bytes
    do not match its name or that the caller cannot decode (damaged), and a manifest that cannot
    be read; the manifest is then rewritten without them, so the next run finds a clean cache.

    Writers append the entry's line before they write the entry, so a file present but not
    listed is never one being written; a line whose entry is missing is one being written (or
    lost: a miss). ``write(path, data)`` writes a file atomically (the caller's
    :func:`capeval.outputs.atomic_write`)."""

    def __init__(self, folder: Path, suffix: str, write: Callable[[Path, bytes], None],
                 note: Callable[[str], None]):
        self.folder, self.suffix, self._write, self._note = Path(folder), suffix, write, note
        self._lines: list[dict[str, str]] = []

    @property
    def manifest(self) -> Path:
        return self.folder / MANIFEST_NAME

    def entries(self) -> list[tuple[str | None, Path]]:
        """``(key, path)`` of every good-looking entry, in the manifest's order (not yet read:
        :meth:`read` checks each digest)."""
        if not self.folder.is_dir():
            return []
        lines, bad = self._read_manifest()
        listed = {ln["entry"] for ln in lines}
        dropped: set[str] = set()
        try:
            files = sorted(e.name for e in os.scandir(self.folder))
        except OSError:
            files = []
        for name in files:
            if name.endswith(self.suffix) and name not in listed:
                self._unlink(self.folder / name)
                self._note(f"cache entry {self.folder / name} is not in its cache's manifest (foreign, or "
                           "left by an older capeval); dropped, its values are recomputed")
        by_key: dict[str, str] = {}
        for ln in lines:
            key, name = ln.get("key"), ln["entry"]
            if key is not None and by_key.setdefault(key, name) != name:
                dropped |= {by_key[key], name}
                self._note(f"cache entries {self.folder / by_key[key]} and {self.folder / name} both claim key "
                           f"{key[:40]!r} (duplicate); both dropped, their values are recomputed")
        for name in dropped:
            self._unlink(self.folder / name)
        self._lines = [ln for ln in lines if ln["entry"] not in dropped]
        if bad or dropped or len(self._lines) < len(lines):
            self._rewrite()
        seen: set[str] = set()
        out = []
        for ln in self._lines:
            p = self.folder / ln["entry"]
            if ln["entry"] not in seen and os.path.lexists(p):
                seen.add(ln["entry"])
                out.append((ln.get("key"), p))
        return out

    def read(self, path: Path) -> bytes | None:
        """The bytes of a listed entry if they match its name; else it is dropped (None)."""
        data = read_cache_entry(path, self._note)
        if data is None:
            self.forget(path)
        return data

    def drop(self, path: Path, why: str) -> None:
        """Drop an entry the caller could not decode: deleted, unlisted, noted."""
        self._unlink(path)
        self.forget(path)
        self._note(f"cache entry {path} {why}; dropped, its values are recomputed")

    def forget(self, path: Path) -> None:
        self._lines = [ln for ln in self._lines if ln["entry"] != path.name]
        self._rewrite()

    def add(self, data: bytes, key: str | None = None) -> Path | None:
        """Write an entry holding ``data`` (listed first, then written); its path, or None when
        the cache cannot be written (a read-only or full disk only costs time)."""
        name = cache_entry_name(data, self.suffix)
        line = {"entry": name} if key is None else {"entry": name, "key": key}
        blob = (json.dumps(line, ensure_ascii=True, sort_keys=True) + "\n").encode()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            # One write(2) to an O_APPEND file: lines of concurrent writers never interleave.
            fd = os.open(self.manifest, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
                         | getattr(os, "O_NOFOLLOW", 0), 0o644)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise OSError(f"{self.manifest} is not a regular file")
                os.write(fd, blob)
            finally:
                os.close(fd)
            self._write(self.folder / name, data)
        except Exception:  # noqa: BLE001 - OSError or the writer's OutputError: the cache is optional
            return None
        self._lines.append(line)
        return self.folder / name

    def _read_manifest(self) -> tuple[list[dict[str, str]], int]:
        """The manifest's valid lines and the number of invalid ones (a manifest that cannot
        be read at all counts as one)."""
        if not os.path.lexists(self.manifest):
            return [], 0
        try:
            text = decode_utf8(self.manifest, read_regular(self.manifest, "cache manifest", MAX_MANIFEST_BYTES))
        except InputError as e:
            self._unlink(self.manifest)
            self._note(f"{e}; the cache's entries are dropped and recomputed")
            return [], 1
        lines, bad = [], 0
        for raw in text.splitlines():
            try:
                if len(raw) > MAX_MANIFEST_LINE:
                    raise InputError("line too long")
                ln = loads_json(raw, str(self.manifest))
                ok = (isinstance(ln, dict) and set(ln) <= {"entry", "key"} and isinstance(ln.get("entry"), str)
                      and isinstance(ln.get("key", ""), str) and ln["entry"] == Path(ln["entry"]).name
                      and ln["entry"].endswith(self.suffix) and ln["entry"] != MANIFEST_NAME)
            except InputError:
                ok = False
            if ok:
                lines.append(ln)
            elif raw.strip():
                bad += 1
        if bad:
            self._note(f"cache manifest {self.manifest}: {bad} unreadable line(s) dropped")
        return lines, bad

    def _rewrite(self) -> None:
        text = "".join(json.dumps(ln, ensure_ascii=True, sort_keys=True) + "\n" for ln in self._lines)
        try:
            self._write(self.manifest, text.encode())
        except Exception:  # noqa: BLE001 - a read-only cache: the same entries are dropped next time
            pass

    @staticmethod
    def _unlink(path: Path) -> None:
        try:
            path.unlink()
        except OSError:
            pass


# -------------------------------------------------------------------------------- plug-ins

def contained(fn: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    """``(fn(), None)``, or ``(None, exception)`` when third-party code raised anything --
    ``SystemExit`` (even ``SystemExit(0)``) and ``GeneratorExit`` included -- except
    ``KeyboardInterrupt``, which still stops the program (exit status 130 on the command line)."""
    try:
        return fn(), None
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 - third-party code must not end the process
        return None, e
