"""Java's ``String.toLowerCase(Locale.ENGLISH)`` of a token that holds a capital sigma.

CoreNLP lower-cases each token with Java's ``toLowerCase``. For every character but U+03A3
(GREEK CAPITAL LETTER SIGMA) it maps as Python's ``str.lower`` does; for the sigma the two
decide "final" differently. Python follows Unicode's Final_Sigma condition (a cased letter
before it and none after it, skipping only case-ignorable characters), Java's
``ConditionalSpecialCasing.isFinalCased`` looks for a cased character anywhere between the
sigma and the word boundaries around it, as the JDK's rule-based word ``BreakIterator`` finds
them: ``"ΟΔΟΣ2Α"`` keeps ``σ`` in Java (the ``Α`` after the digit is in the same word), ``"A1Σ"``
gives ``ς`` (``A`` is). This module reproduces that rule and the JDK's word-break rules
(``sun.text.resources.BreakIteratorRules``, "WordBreakRules": words of letters with inner
dashes, apostrophes, quotes and periods, numbers with inner ``,.'"``, a currency or ``#``
prefix, a ``%`` suffix, runs of spaces, of kana and of kanji; non-spacing and enclosing marks
and format characters never start a piece). Only tokens holding U+03A3 come here.
"""
from __future__ import annotations

import re
import unicodedata

SIGMA = "\u03a3"

# One letter per character class of the JDK's word-break rules; "." belongs to three classes.
# (measured on Java 17: CJK extension A and the private use area are letters and "other" there)
_KANJI = re.compile("[\u3005\u4e00-\u9fa5\uf900-\ufa2d]")
_DIACRITIC = "\u3099\u309a\u309b\u309c\u30fb\u30fc"  # joins both kana runs
_KATA = re.compile(f"[\u30a1-\u30fa\u30fd\u30fe{_DIACRITIC}]")
_HIRA = re.compile(f"[\u3041-\u3094\u309d\u309e{_DIACRITIC}]")
_SPECIAL = {
    ".": ".", '"': "q", "'": "q", ",": "n", "\u066b": "n", "\u00ad": "w", "\u2027": "w",
    "#": "$", "%": "p", "&": "p", "\u00a2": "p", "\u066a": "p", "\u2030": "p", "\u2031": "p",
    "\u0964": "d", "\u0965": "d", "\t": "s", "\n": "l", "\x0c": "l", "\u2028": "l", "\u2029": "l",
    "\r": "r",
}


def _cls(ch: str) -> str:
    """The character's class: L letter, D digit, w mid-word only, q mid-word and mid-number,
    n mid-number only, "." both and a number prefix, $ number prefix, p number suffix,
    d danda, s space, l line separator, r CR, K kanji, T katakana, H hiragana (T and H
    overlap: "B" is both), o anything else."""
    if ch in _SPECIAL:
        return _SPECIAL[ch]
    kata, hira = _KATA.match(ch) is not None, _HIRA.match(ch) is not None
    if kata or hira:
        return "B" if kata and hira else "T" if kata else "H"
    if _KANJI.match(ch):
        return "K"
    cat = unicodedata.category(ch)
    if cat[0] == "L" or cat == "Mc":
        return "L"
    if cat[0] == "N":
        return "D"
    if cat in ("Pd", "Pc"):
        return "w"
    if cat == "Sc":
        return "$"
    if cat == "Zs":
        return "s"
    return "o"


_WORD = "L+(?:[wq.]L+)*d?"
_NUMBER = "D+(?:[qn.]D+)*"
_PIECE = re.compile(
    "|".join([
        "(?s:.)",
        f"(?:{_WORD})?(?:{_NUMBER}{_WORD})*(?:{_NUMBER}p?)?",
        f"[$.](?:{_NUMBER}{_WORD})*(?:{_NUMBER}p?)?",
        "s*r?l?",
        "[TB]*",
        "[HB]*",
        "K*",
    ])
)


def _ignorable(ch: str) -> bool:
    # the marks and format characters the rules skip, but for those they name in a class
    return unicodedata.category(ch) in ("Mn", "Me", "Cf") and ch != "\u00ad"


def _boundaries(tok: str) -> set[int]:
    """Word boundaries of ``tok`` (code point offsets) as the JDK's word BreakIterator puts
    them: the longest piece at each position, with marks and format characters skipped and
    never preceded by a boundary. Measured quirks of the JDK's iterator are kept: marks (Mn,
    Me) at the very start are one piece each, and a piece ends right after a letter above
    U+FFFF unless that letter starts the text."""
    bounds = {0, len(tok)}
    start = 0
    while start < len(tok) and _ignorable(tok[start]):
        start += 1
        if unicodedata.category(tok[start - 1]) != "Cf":
            bounds.add(start)
    keep = [i for i in range(start, len(tok)) if not _ignorable(tok[i])]
    # A character that needs what follows it (mid-word, mid-number, number prefix) joins
    # nothing when marks follow it
    classes = "".join(
        "o" if c in "wqn.$" and _has_mark(tok, k + 1, nxt) else c
        for k, nxt, c in zip(keep, [*keep[1:], len(tok)], map(_cls, map(tok.__getitem__, keep)))
    )
    pos, n = 0, len(classes)
    while pos < n:
        end = next(e for e in range(n, pos, -1) if _PIECE.fullmatch(classes, pos, e))
        astral = next((k for k in range(pos, end) if keep[k] > 0 and tok[keep[k]] > "\uffff" and classes[k] == "L"), None)
        if astral is not None:  # the piece ends right after it, before any mark
            end = astral + 1
            bounds.add(keep[astral] + 1)
        elif classes[end - 1] == "d":  # marks after a danda that ends a piece: one piece each
            bounds.add(keep[end - 1] + 1)
            bounds.update(j + 1 for j in range(keep[end - 1] + 1, keep[end] if end < n else len(tok))
                          if unicodedata.category(tok[j]) != "Cf")
        else:
            bounds.add(keep[end] if end < n else len(tok))
        pos = end
    return bounds



def _has_mark(tok: str, a: int, b: int) -> bool:
    return any(unicodedata.category(ch) in ("Mn", "Me") for ch in tok[a:b])


def _cased(ch: str) -> bool:
    """``ConditionalSpecialCasing.isCased`` (JDK 17): a letter of category Lu, Ll or Lt, or one
    of the Other_Lowercase / Other_Uppercase ranges it lists."""
    if unicodedata.category(ch) in ("Lu", "Ll", "Lt"):
        return True
    c = ord(ch)
    return (0x02B0 <= c <= 0x02B8 or 0x02C0 <= c <= 0x02C1 or 0x02E0 <= c <= 0x02E4 or c == 0x0345
            or c == 0x037A or 0x1D2C <= c <= 0x1D61 or 0x2160 <= c <= 0x217F or 0x24B6 <= c <= 0x24E9)


def _final(tok: str, index: int, bounds: set[int]) -> bool:
    i = index
    while i > 0 and i not in bounds:
        if _cased(tok[i - 1]):
            j = index + 1
            while j < len(tok) and j not in bounds:
                if _cased(tok[j]):
                    return False
                j += 1
            return True
        i -= 1
    return False


def lower(tok: str) -> str:
    """``tok.toLowerCase(Locale.ENGLISH)`` as Java computes it."""
    if SIGMA not in tok:
        return tok.lower()
    bounds = _boundaries(tok)
    pieces = tok.split(SIGMA)
    out = [pieces[0].lower()]
    index = len(pieces[0])
    for piece in pieces[1:]:
        out.append("\u03c2" if _final(tok, index, bounds) else "\u03c3")
        out.append(piece.lower())
        index += 1 + len(piece)
    return "".join(out)
