"""The paraphrase table read in blocks of whole lines, for the conversions that work on bytes
(:mod:`.convert`, :mod:`.convert_arrow`, ``_paratable.c``): each makes its own ids, but all
must cut, check and end the table alike to write the same files.

The gzip stream is inflated by zlib directly (its own CRC and length checks included), or by
ISA-L's drop-in replacement when the optional ``isal`` package is installed (the same bytes,
in half zlib's CPU time), and one block ahead on a second thread: both release the GIL while
they inflate, and so does the compiled builder while it reads a block, so on two cores the
272 MB of coco's table are inflated while the previous block is being converted. Anything but a well-formed gzip file
(concatenated members and zero padding allowed, as :mod:`gzip` allows them) counts as "not
plain": the general path then reads it with :mod:`gzip` and fails, or not, as it always did.
"""
from __future__ import annotations

import queue
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path

_READ = 1 << 21  # compressed bytes per read
_GZIP = 16 + zlib.MAX_WBITS  # a gzip member: header, deflate data, CRC-32 and length checked


def _zlib():
    """ISA-L's zlib module if installed, else zlib; and the errors either raises on bad data."""
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib, zlib.error
    return isal_zlib, (isal_zlib.error, zlib.error)


class _Malformed(Exception):
    """Not a well-formed gzip file; :mod:`gzip` will say what is wrong."""


def _inflate(para: Path) -> Iterator[bytes]:
    """The decompressed bytes of every gzip member of ``para``, in pieces."""
    inflater, error = _zlib()
    with open(para, "rb") as f:
        data = f.read(_READ)
        if not data:
            return  # an empty file is an empty table for gzip as well
        d = inflater.decompressobj(_GZIP)
        while True:
            try:
                out = d.decompress(data)
            except error:
                raise _Malformed from None
            if out:
                yield out
            if d.eof:  # another member may follow, after zero padding
                data = d.unused_data.lstrip(b"\0")
                while not data:
                    data = f.read(_READ)
                    if not data:
                        return
                    data = data.lstrip(b"\0")
                d = inflater.decompressobj(_GZIP)
                continue
            data = f.read(_READ)
            if not data:
                try:
                    tail = d.flush()
                except error:
                    raise _Malformed from None
                if not d.eof:
                    raise _Malformed  # truncated
                if tail:
                    yield tail
                return


def _blocks(para: Path, size: int) -> Iterator[memoryview]:
    """Blocks of about ``size`` bytes ending after a newline (a last line without one gets it),
    as views: each block's bytes are copied once, from the inflated pieces."""
    parts: list[bytes] = []
    held = 0
    rest = b""
    for piece in _inflate(para):
        parts.append(piece)
        held += len(piece)
        if held >= size:
            data = b"".join([rest, *parts])
            parts, held = [], 0
            cut = data.rfind(b"\n") + 1
            rest = data[cut:]
            yield memoryview(data)[:cut]
    data = b"".join([rest, *parts])
    if data and not data.endswith(b"\n"):
        data += b"\n"
    yield memoryview(data)


def _ahead(blocks: Iterator[bytes]) -> Iterator[bytes]:
    """``blocks``, produced one block ahead on a thread of their own."""
    q: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()
    done = object()

    def produce() -> None:
        try:
            for b in blocks:
                while not stop.is_set():
                    try:
                        q.put((b, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put((done, None))
        except BaseException as e:  # handed to the consumer, raised there
            q.put((None, e))

    t = threading.Thread(target=produce, name="capeval-meteor-inflate", daemon=True)
    t.start()
    try:
        while True:
            b, err = q.get()
            if err is not None:
                raise err
            if b is done:
                return
            yield b
    finally:
        stop.set()
        while t.is_alive():  # unblock a producer waiting to put, then let it end
            try:
                q.get_nowait()
            except queue.Empty:
                pass
            t.join(0.05)


def plain_blocks(para: Path, size: int, not_plain: type[Exception], check: bool = True) -> Iterator[bytes | memoryview]:
    """The decompressed table in blocks of about ``size`` bytes cut after a newline, each
    ending with one (a last line without it still counts, as for readLine); the last block may
    be empty. A ``\\r`` or invalid UTF-8 raises ``not_plain`` (the general path decides),
    unless ``check`` is false (the caller checks them itself, and gets read-only views); so does
    a malformed gzip file."""
    try:
        for view in _ahead(_blocks(para, size)):
            if not check:
                yield view
                continue
            data = view.tobytes()
            if b"\r" in data:
                raise not_plain
            if not data.isascii():
                try:
                    data.decode("utf-8")
                except UnicodeDecodeError:
                    raise not_plain from None
            yield data
    except _Malformed:
        raise not_plain from None
