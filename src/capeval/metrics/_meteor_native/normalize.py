"""METEOR 1.5's ``-norm`` text normalisation for English (punctuation kept), then lower-casing.

The jar's ``Normalizer.normalizeLine`` is a Moses-tokenizer derivative: it separates
punctuation, escapes runs of dots, splits commas outside numbers, unifies quotes and dashes,
splits dashes between alphanumerics, splits English contractions to the right and breaks a
final dot off a word unless a non-breaking-prefix rule keeps it. The character classes below
are the ones compiled into the jar's class (read from it with reflection), not those of its
source file; Java regex classes are ASCII-only (``\\s``, ``\\p{Digit}``, ``\\p{Lower}``), so
they are spelt out.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from .java import lower, tokens, trim

_ALPHA = (
    "A-Za-z\u0160\u017d\u0161\u017e\u0178\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u017e"
    "\u0400-\u04ff\u0500-\u0527\ua640-\ua66e\ua67e-\ua697\u1d00-\u1d7f"
)
_ALNUM = "0-9" + _ALPHA
_JAVA_SPACE = " \t\n\x0b\f\r"

_SEP_OTHER = re.compile("([^" + _ALNUM + _JAVA_SPACE + r"\.'`,\-\u2018\u2019])")
_MULTI_DOT = re.compile(r"\.([\.]+)")
_MULTI_DOT2 = re.compile(r"DOTMULTI\.([^\.])")
_COMMA = re.compile(r"([^0-9])[,]([^0-9])")
_COMMA2 = re.compile(r"([0-9])[,]([^0-9])")
_COMMA3 = re.compile(r"([^0-9])[,]([0-9])")
_QUOTE = re.compile("([`\u2018\u2019])")
_QUOTE2 = re.compile("([\u201c\u201d]|'')")
_RM_DASH = re.compile("([" + _ALNUM + r"\.])[\-]([" + _ALNUM + "])")
_CONT1 = re.compile("([^" + _ALPHA + "])[']([^" + _ALPHA + "])")
_CONT2 = re.compile("([^" + _ALPHA + "0-9])[']([" + _ALPHA + "])")
_CONT3 = re.compile("([" + _ALPHA + "])[']([^" + _ALPHA + "])")
_CONT4 = re.compile("([" + _ALPHA + "])[']([" + _ALPHA + "])")
_CONT5 = re.compile(r"([0-9])[']([s])")
_WHITE = re.compile("[  \u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000\u00a0]+")
_HAS_ALPHA = re.compile("[" + _ALPHA + "]")
_STARTS_LOWER = re.compile("[a-z]")
_STARTS_DIGIT = re.compile("[0-9]")

NBP_ANY = 1
NBP_NUMERIC_ONLY = 2


def parse_nonbreaking_prefixes(lines: Iterable[str]) -> dict[str, int]:
    """The jar's reading of ``nonbreaking/english.prefixes``."""
    out: dict[str, int] = {}
    for line in lines:
        toks = tokens(line)
        if not toks or toks[0].startswith("#"):
            continue
        out[toks[0]] = NBP_NUMERIC_ONLY if len(toks) > 1 and toks[1] == "#NUMERIC_ONLY#" else NBP_ANY
    return out


def normalize(line: str, nbp: dict[str, int]) -> str:
    """``Normalizer.normalizeLine(line, LANG_EN, keepPunctuation=true)``."""
    s = " " + line + " "
    s = _SEP_OTHER.sub(r" \1 ", s)
    s = _MULTI_DOT.sub(r" DOTMULTI\1", s)
    while "DOTMULTI." in s:
        s = _MULTI_DOT2.sub(r"DOTDOTMULTI \1", s)
        s = s.replace("DOTMULTI.", "DOTDOTMULTI")
    s = _COMMA.sub(r"\1 , \2", s)
    s = _COMMA2.sub(r"\1 , \2", s)
    s = _COMMA3.sub(r"\1 , \2", s)
    s = _QUOTE.sub("'", s)
    s = _QUOTE2.sub(' " ', s)
    s = s.replace("\u2013", "-").replace("--", "-")
    s = _RM_DASH.sub(r"\1 \2", s)
    s = _CONT1.sub(r"\1 ' \2", s)
    s = _CONT2.sub(r"\1 ' \2", s)
    s = _CONT3.sub(r"\1 ' \2", s)
    s = _CONT4.sub(r"\1 '\2", s)
    s = _CONT5.sub(r"\1 '\2", s)
    words = tokens(s)
    parts = []
    last = len(words) - 1
    for i, w in enumerate(words):
        if len(w) > 1 and w.endswith("."):
            pre = w[:-1]
            kind = nbp.get(pre)
            if "." in pre and _HAS_ALPHA.search(pre):
                parts.append(w.replace(".", ""))  # U.S. -> US
            elif kind == NBP_ANY or (i < last and _STARTS_LOWER.match(words[i + 1])):
                parts.append(w)
            elif kind == NBP_NUMERIC_ONLY and i < last and _STARTS_DIGIT.match(words[i + 1]):
                parts.append(w)
            else:
                parts.append(pre + " .")
        else:
            parts.append(w)
    s = " ".join(parts) + " "
    while "DOTDOTMULTI" in s:
        s = s.replace("DOTDOTMULTI", "DOTMULTI.")
    s = s.replace("DOTMULTI", ".")
    return trim(_WHITE.sub(" ", s))


def normalize_lower(line: str, nbp: dict[str, int]) -> str:
    """What the jar aligns: the normalised line, lower-cased."""
    return lower(normalize(line, nbp))


#: Lines of lower-case ASCII letters, digits and spaces: no rule of :func:`normalize` changes
#: them (every rule needs punctuation, an upper-case ``DOTMULTI`` or other spaces) beyond
#: collapsing the spaces, and lower-casing keeps them. PTB-tokenized captions mostly are.
_PLAIN = re.compile("[a-z0-9 ]*")


def line_words(line: str, nbp: dict[str, int]) -> list[str]:
    """The words the jar aligns for one input line: trimmed, normalised, lower-cased, split."""
    line = trim(line)
    if _PLAIN.fullmatch(line):
        return line.split()
    return tokens(normalize_lower(line, nbp))

