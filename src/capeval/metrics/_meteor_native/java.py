"""The few Java string operations METEOR 1.5 relies on, with Java's exact semantics.

Python's nearest equivalents differ at the edges: ``str.split()`` splits on Unicode spaces
where ``java.util.StringTokenizer`` splits on five ASCII characters only, ``str.strip()``
keeps control characters ``String.trim()`` removes, ``hash()`` is not ``String.hashCode()``
(which the jar uses as word identity, collisions included), and ``str.lower()`` follows a
newer Unicode than OpenJDK 17 for 40 characters.
"""
from __future__ import annotations

import re

#: ``StringTokenizer``'s default delimiters.
_TOKEN_SPLIT = re.compile("[ \t\n\r\f]+")

#: Characters ``str.lower()`` (Unicode 14) lowers but OpenJDK 17's ``toLowerCase`` (Unicode
#: 13) leaves as they are; measured over every code point against the JVM.
_JDK17_UNCASED = frozenset(
    [0x2C2F, 0xA7C0, 0xA7D0, 0xA7D6, 0xA7D8]
    + [c for c in range(0x10570, 0x10596) if c not in (0x1057B, 0x1058B, 0x10593)]
)
_UNCASED_RE = re.compile("([" + "".join(chr(c) for c in sorted(_JDK17_UNCASED)) + "])")


def tokens(s: str) -> list[str]:
    """``new StringTokenizer(s)`` as a list."""
    return [t for t in _TOKEN_SPLIT.split(s) if t]


def trim(s: str) -> str:
    """``String.trim()``: drop leading and trailing characters up to U+0020."""
    i, j = 0, len(s)
    while i < j and s[i] <= " ":
        i += 1
    while j > i and s[j - 1] <= " ":
        j -= 1
    return s[i:j]


def lower(s: str) -> str:
    """``String.toLowerCase()`` in an English locale on OpenJDK 17."""
    if s.isascii():
        return s.lower()
    if not _UNCASED_RE.search(s):
        return s.lower()
    return "".join(p if i % 2 else p.lower() for i, p in enumerate(_UNCASED_RE.split(s)))


def string_hash(s: str) -> int:
    """``String.hashCode()``: over UTF-16 code units, 32-bit signed."""
    h = 0
    if s.isascii():
        for c in s.encode("ascii"):
            h = (31 * h + c) & 0xFFFFFFFF
    else:
        data = s.encode("utf-16-be", "surrogatepass")
        for k in range(0, len(data), 2):
            h = (31 * h + ((data[k] << 8) | data[k + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h
