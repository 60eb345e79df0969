"""Pure-Python emulation of pycocoevalcap's PTB tokenization, without Java.

pycocoevalcap runs ``java -cp stanford-corenlp-3.4.1.jar edu.stanford.nlp.process.PTBTokenizer
-preserveLines -lowerCase`` over the captions (one per line), then drops every token equal to
one of 17 punctuation strings and re-joins with single spaces (PROTOCOLS.md §1). This module
gives the same strings: ``tokenize(["A man's T-shirt (red)."]) == ["a man 's t-shirt -lrb- red
-rrb-"]``.

Two paths give identical results. Most captions are plain words, numbers, hyphenated words,
``'s`` and sentence punctuation; for those a few compiled regexes decide the tokens at C speed.
Everything else goes through :mod:`capeval.text._ptb_lexer`, a longest-match emulation of the
CoreNLP lexer. docs/TOKENIZER.md records the validation against the jar and the known
differences.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from ..errors import InputError
from ..validation import space_line_breaks
from . import _ptb_lexer

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
# Possessive quantifiers: the shape is unambiguous, so backtracking would only waste time.
_CHUNK = (
    r"""(?:"?(?:'s|[A-Za-z0-9]++(?:-[A-Za-z0-9]++)*+(?:'s)?+)(?:[,;:!?]|\.(?=[ "]|$))?+"?+|[.,;:!?"])"""
)
_FAST_SHAPE = re.compile(rf" *+(?:{_CHUNK}(?: ++{_CHUNK})*+)? *+")

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


# --- general path ------------------------------------------------------------------------------


def _slow(caption: str) -> str:
    # The jar prints tokens separated by one space; the wrapper right-strips the line, splits
    # it on " " and drops the punctuation tokens. Lower-casing is Java's String.toLowerCase,
    # which Python's str.lower matches outside a few locale-specific letters.
    # Line breaks are read as spaces, as pycocoevalcap does for "\n" (the fast path's shape
    # admits no line break, so only this path sees them).
    line = " ".join(_ptb_lexer.lex(space_line_breaks(caption))).lower().rstrip()
    return " ".join(t for t in line.split(" ") if t not in PUNCTUATIONS)


def tokenize_one(caption: str) -> str:
    """Tokenize one caption; line-break characters count as spaces (validation.LINE_BREAKS)."""
    fast = _fast(caption)
    return fast if fast is not None else _slow(caption)


def tokenize(captions: Iterable[str]) -> list[str]:
    """Tokenize each caption the way pycocoevalcap's PTBTokenizer does, one output per input.

    Never raises on unusual characters: characters CoreNLP cannot tokenize are dropped, as the
    jar does. A non-string item raises :class:`InputError` naming its position.
    """
    out: list[str] = []
    for i, cap in enumerate(captions):
        if not isinstance(cap, str):
            raise InputError(f"caption {i}: expected a string, got {type(cap).__name__} ({cap!r})")
        out.append(tokenize_one(cap))
    return out
