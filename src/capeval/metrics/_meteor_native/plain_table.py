"""The paraphrase table read in blocks of whole lines, for the two conversions that work on
bytes (:mod:`.convert` and :mod:`.convert_arrow`): each makes its own ids, but both must cut,
check and end the table alike to write the same files."""
from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path


def plain_blocks(para: Path, size: int, not_plain: type[Exception]) -> Iterator[bytes]:
    """The decompressed table in blocks of about ``size`` bytes cut after a newline, each
    ending with one (a last line without it still counts, as for readLine); the last block may
    be empty. A ``\\r`` or invalid UTF-8 raises ``not_plain`` (the general path decides)."""
    rest = b""
    with gzip.open(para, "rb") as f:
        while True:
            block = f.read(size)
            data = rest + block
            if block:
                cut = data.rfind(b"\n") + 1
                data, rest = data[:cut], data[cut:]
            elif data:
                data += b"\n"
            if b"\r" in data:
                raise not_plain
            if not data.isascii():
                try:
                    data.decode("utf-8")
                except UnicodeDecodeError:
                    raise not_plain from None
            yield data
            if not block:
                return
