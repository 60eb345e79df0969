"""Pure-Python emulation of pycocoevalcap's PTB tokenization, without Java.

pycocoevalcap runs ``java -cp stanford-corenlp-3.4.1.jar edu.stanford.nlp.process.PTBTokenizer
-preserveLines -lowerCase`` over the captions (one per line), then drops every token equal to
one of 17 punctuation strings and re-joins with single spaces (docs/TOKENIZER.md). This module
gives the same strings: ``tokenize(["A man's T-shirt (red)."]) == ["a man 's t-shirt -lrb- red
-rrb-"]``.

Two paths give identical results. Most captions are plain words, numbers, hyphenated words,
``'s`` and sentence punctuation; for those a few compiled regexes decide the tokens at C speed.
Everything else goes through :mod:`capeval.text._ptb_lexer`, a longest-match emulation of the
CoreNLP lexer. docs/TOKENIZER.md records the validation against the jar and the known
differences.
"""
from __future__ import annotations

import bisect
import itertools
import operator
import re
from collections.abc import Iterable
from itertools import repeat
from typing import cast

from .. import _compiled
from ..errors import InputError
from ..validation import space_line_breaks
from . import _java_case, _ptb_lexer

#: pycocoevalcap/tokenizer/ptbtokenizer.py PUNCTUATIONS, matched against tokens exactly
#: (after lower-casing, so the upper-case bracket entries never match).
PUNCTUATIONS = frozenset(
    ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--", "...", ";"]
)

# --- fast path ---------------------------------------------------------------------------------
# A caption qualifies when it is space-separated chunks of these kinds, each of which the lexer
# turns into exactly the chunk's alphanumeric part, its "'s", and punctuation tokens that the
# filter then drops:
#   word   letters/digits, optionally hyphen-joined (WORD / THING / HTHING / DATE / PHONE all
#          keep such a chunk whole), optionally followed by 's (split off as a clitic), and by
#          one of , ; : ! ? or by a period that ends the chunk; a double quote may open or
#          close it (a quote token: `` or '');
#   's     a free-standing clitic;
#   p      one of . , ; : ! ? "  (runs like "?!" or "..." are single tokens and go the slow way).
# Plain greedy quantifiers only: possessive quantifiers and atomic groups (new in 3.11) match
# differently in early 3.11 patch releases (3.11.2 accepted "a dog runs-."). The shape is
# unambiguous (trailing spaces belong to the last chunk, so no two space runs meet), hence a
# greedy backtrack never finds a match the possessive form would refuse, and each failed
# backtrack stops at the next character: matching stays linear in the caption's length.
_CHUNK = r"""(?:"?(?:'s|[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*(?:'s)?)(?:[,;:!?]|\.(?=[ "]|$))?"?|[.,;:!?"])"""
_FAST_SHAPE = re.compile(rf" *(?:{_CHUNK}(?: +{_CHUNK})* *)?")

# Shapes inside a qualifying caption where CoreNLP does something else: contractions it splits
# ("gonna" -> "gon na"), abbreviations and one-letter initials that keep their period ("etc.",
# "Mr.", "a."), and digits across a space (phone numbers and fractions join them with U+00A0).
_SPLIT_WORDS = ("cannot", "gonna", "gotta", "lemme", "gimme", "wanna")
_ABBREVIATIONS = frozenset(
    (
        # CoreNLP's abbreviation lists (months, days, states, companies, units, titles, ...),
        # lower-cased; a superset is harmless: such captions just take the general path.
        "jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thurs fri "
        "ala ariz az ark calif colo conn ct dak del fla ga ill ind kan kans ky la mass md mich minn "
        "miss mo mont neb nev okla ore pa penn tenn tex va vt wash wis wisc wyo "
        "inc co cos corp pty ptys pte ptes ppty pptys ppte pptes ltd plc rt bancorp bhd assn univ "
        "intl sys dept tel est ext sq ft jr sr bros esq blvd rd etc al seq bldg mr mrs ms dr drs "
        "prof profs sen sens rep reps atty attys lt col gen messrs gov govs adm rev maj sgt cpl pvt "
        "mt capt st ste ave pres lieut hon brig cmdr comdr pfc spc supt supts det adj adv asst "
        "assoc ens insp mlle mme msgr sfc vs alex wm jos cie cf treas ph invt elec natl mfg mtg "
        "ca fig figs prop no nos art pp op"
    ).split()
)
_SPLIT_OR_JOINED = re.compile("|".join(_SPLIT_WORDS) + r"|\d +\d")
# In a caption of this shape every . , ; : ! ? " is a token of its own that the filter drops,
# and every apostrophe starts an "'s" clitic token.
_FAST_OUTPUT = str.maketrans({**dict.fromkeys('.,;:!?"'), "'": " '"})


def _fast(caption: str) -> str | None:
    if _FAST_SHAPE.fullmatch(caption) is None:
        return None
    low = caption.lower()
    if _SPLIT_OR_JOINED.search(low) is not None:
        return None
    if "." in low:
        for chunk in low.split():
            if "." in chunk and chunk != ".":
                # the letters/digits right before the period; "'s." is a clitic, never an abbreviation
                word = chunk.rstrip('.,;:!?"').lstrip('"').rsplit("-", 1)[-1]
                if word.endswith("'s"):
                    continue
                if (len(word) == 1 and word.isalpha()) or word in _ABBREVIATIONS:
                    return None
    return " ".join(low.translate(_FAST_OUTPUT).split())


# --- the fast path over many captions at once ------------------------------------------------
# The same decisions as _fast, taken by a few C-speed passes over the captions joined with
# "\n" (none holds one) instead of a dozen Python-level steps per caption: the shape test runs
# line by line (MULTILINE anchors; no part of the shape can cross a "\n"), the rare vetoes are
# found by position, and the output transformation is applied to the joined text.
_FAST_LINE = re.compile(rf"(?m)^{_FAST_SHAPE.pattern}$")
# The vetoes of _fast, found by position in the joined lower-cased text (each search scans
# in C; hits are rare and checked one by one). Only lines of the fast shape matter, so ASCII
# classes suffice: such lines hold nothing else.
_DIGITS_ACROSS_SPACE = re.compile("[0-9] +[0-9]")
_DOT_AFTER_ALNUM = re.compile(r"[a-z0-9]\.")
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_SPACE_RUNS = re.compile(" {2,}")


def _line_of(offsets: list[int], pos: int) -> int:
    return bisect.bisect_right(offsets, pos) - 1


def _fast_many(captions: list[str]) -> list[str | None]:
    """``[_fast(c) for c in captions]`` for captions without "\n", in a few passes."""
    n = len(captions)
    if n == 0:
        return []
    core = _compiled.core
    if core is not None:  # the same decisions, caption by caption in C (capeval._speedups.ptb_fast)
        return core.ptb_fast(captions, _ABBREVIATIONS)
    joined = "\n".join(captions)
    # A line is emptied by the substitution exactly when it has the fast shape.
    slow = {i for i, rest in enumerate(_FAST_LINE.sub("", joined).split("\n")) if rest}
    low = joined.lower()
    low_lines = low.split("\n")  # lower() may change lengths outside ASCII: offsets from low
    offsets = [0, *itertools.accumulate(len(x) + 1 for x in low_lines)]
    hits = [m.start() for m in _DIGITS_ACROSS_SPACE.finditer(low)]
    for word in _SPLIT_WORDS:
        i = low.find(word)
        while i >= 0:
            hits.append(i)
            i = low.find(word, i + 1)
    # A "." right after letters/digits: _fast vetoes it when that run (back to a space, quote or
    # hyphen) is one letter or an abbreviation, unless it is the "s" of "'s".
    for m in _DOT_AFTER_ALNUM.finditer(low):
        end = m.start() + 1
        j = end - 1
        while j > 0 and low[j - 1] in _ALNUM:
            j -= 1
        if j > 0 and low[j - 1] == "'":
            continue
        word = low[j:end]
        if (len(word) == 1 and word.isalpha()) or word in _ABBREVIATIONS:
            hits.append(j)
    for pos in hits:
        slow.add(_line_of(offsets, pos))
    out = low
    for ch in '.,;:!?"':
        out = out.replace(ch, "")
    # Only spaces separate words in these lines: collapse runs, trim each line's ends.
    out = _SPACE_RUNS.sub(" ", out.replace("'", " '")).replace(" \n", "\n").replace("\n ", "\n").strip(" ")
    lines: list[str | None] = [*out.split("\n")]
    for i in slow:
        lines[i] = None
    return lines


# --- general path ------------------------------------------------------------------------------


# Characters above U+FFFF: the jar's lexer reads UTF-16 code units, so each is two characters
# to its rules (a surrogate pair; "http://😀" is a URL of two characters after the "//").
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


def _pair(m: re.Match[str]) -> str:
    cp = ord(m.group()) - 0x10000
    return chr(0xD800 + (cp >> 10)) + chr(0xDC00 + (cp & 0x3FF))


def _utf16(text: str) -> str:
    return text if text.isascii() or _ASTRAL.search(text) is None else _ASTRAL.sub(_pair, text)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _from_utf16(line: str) -> str:
    # pairs back into their characters; a half pair a token cut off is printed by Java as "?"
    return _LONE_SURROGATE.sub("?", line.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass"))


def _lower(line: str) -> str:
    # CoreNLP lower-cases token by token with Java's String.toLowerCase, which equals
    # str.lower but for when a capital sigma is final (capeval.text._java_case).
    if _java_case.SIGMA not in line:
        return line.lower()
    return " ".join(map(_java_case.lower, line.split(" ")))


def _slow(caption: str, following: str = "\n") -> str:
    # The jar prints tokens separated by one space; the wrapper right-strips the line, splits
    # it on " " and drops the punctuation tokens.
    # Line breaks are read as spaces, as pycocoevalcap does for "\n" (the fast path's shape
    # admits no line break, so only this path sees them).
    spaced = space_line_breaks(caption)
    text = _utf16(spaced)
    line = " ".join(_ptb_lexer.lex(text, following=_utf16(following)))
    if text is not spaced:
        line = _from_utf16(line)
    line = _lower(line).rstrip()
    return " ".join(t for t in line.split(" ") if t not in PUNCTUATIONS)


def tokenize_one(caption: str) -> str:
    """Tokenize one caption; the line breaks the jar ends a line at count as spaces
    (validation.SPACED_LINE_BREAKS)."""
    fast = _fast(caption)
    return fast if fast is not None else _slow(caption)


def tokenize(captions: Iterable[str]) -> list[str]:
    """Tokenize each caption the way pycocoevalcap's PTBTokenizer does, one output per input.

    Never raises on unusual characters: characters CoreNLP cannot tokenize are dropped, as the
    jar does. A non-string item raises :class:`InputError` naming its position.
    """
    caps = list(captions)
    # Per-caption checks as C-level passes (map over builtins): this runs on 10^5-10^6 captions.
    if not all(map(isinstance, caps, repeat(str))):
        i = next(i for i, cap in enumerate(caps) if not isinstance(cap, str))
        raise InputError(f"caption {i}: expected a string, got {type(caps[i]).__name__} ({caps[i]!r})")
    if any(map(operator.contains, caps, repeat("\n"))):
        # captions holding "\n" take the general path; the others are batched
        batch = [i for i, c in enumerate(caps) if "\n" not in c]
        out: list[str | None] = [None] * len(caps)
        for i, t in zip(batch, _fast_many([caps[i] for i in batch])):
            out[i] = t
    else:
        out = _fast_many(caps)
    for i in list(itertools.compress(range(len(out)), map(operator.is_, out, repeat(None)))):
        out[i] = _slow(caps[i])
    return cast("list[str]", out)  # every None was replaced just above


# --- the jar's view of a whole batch -----------------------------------------------------------
#: How much of the following lines a caption's context needs: the longest trailing context that
#: reaches into the next line is ACRONYM's (spaces and line breaks, then one of 46 words or an
#: SGML tag, then a space); 256 characters past the blank lines cover any caption-like tag.
_CONTEXT_CHARS = 256
_BLANKS = " \t\u00A0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200A\u3000\n"


def tokenize_lines(captions: Iterable[str]) -> list[str]:
    """What pycocoevalcap's PTBTokenizer gives for ``captions`` as one batch: the captions
    joined with ``"\\n"`` into one file, as its wrapper writes the references (or the
    candidates) of a whole evaluation.

    In that file a caption's last token can depend on the next line, and the last caption is
    followed by the end of the file (docs/TOKENIZER.md, "Context across lines"): ``"It is a
    b."`` keeps ``b.`` before ``"a dog"`` but loses the period before ``"A dog"``.
    :func:`tokenize` gives every caption the context of a caption followed by an empty line,
    so that a caption's tokens never depend on its neighbours; this function reproduces the
    batch instead (used to compare with the jar token for token, and by callers that must
    equal one pycocoevalcap run on one batch).
    """
    caps = list(captions)
    # tokenize validates; its fast path's shapes hold no token whose trailing context can reach
    # past the caption (no initial or abbreviation before a period, no quote but '"'), so only
    # the general path needs the following lines
    out = tokenize(caps)
    lines = [space_line_breaks(c) for c in caps]
    n = len(lines)
    for i, cap in enumerate(caps):
        if _fast(cap) is not None:
            continue
        j = i + 1
        following = ""
        while j < n:
            following += "\n" + lines[j]
            j += 1
            if len(following.lstrip(_BLANKS)) >= _CONTEXT_CHARS:
                break
        out[i] = _slow(cap, following)
    return out
