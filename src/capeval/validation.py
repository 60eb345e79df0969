"""Input checks shared by the API, the CLI and the benchmark loaders.

Line breaks. pycocoevalcap replaces ``\\n`` in a caption by a space before tokenizing; the
other line-end characters reach the Java PTB tokenizer, which splits the caption there and
silently shifts every later caption (docs/TOKENIZER.md, Known differences). By default (``line_breaks="space"``)
every character that ends a line for the jar is replaced by a space (:data:`SPACED_LINE_BREAKS`),
which equals pycocoevalcap for ``\\n`` and is what it would do for the others had it not
misaligned them; U+001C-1E and NEL, which end a line only for Python, are kept for the
tokenizer, which reads them as the jar does. ``line_breaks="refuse"``
(strict mode) raises instead, naming the item.

Unicode forms. "é" can be one code point (U+00E9, NFC, what keyboards and most files produce)
or two ("e" + U+0301, NFD, what some macOS file systems and tools produce). Every metric
compares code points, as pycocoevalcap does, so an NFD candidate against NFC references shares
no n-gram at those words. capeval keeps that default, which is pycocoevalcap's number; it warns
when the inputs mix the two forms, and ``normalize="nfc"`` (CLI ``--normalize nfc``) composes
every text first, which the signatures' ``tok`` field then shows (``+norm=nfc``).

:func:`prepare_texts` is the one way a scored batch's texts are read (``capeval.score`` and so
every streamed chunk): validated, line breaks and forms as above, with the ``tok`` suffix that
says how they were changed.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from .errors import InputError

#: Characters that end a line for Java's tokenizer or for Python's ``str.splitlines``.
LINE_BREAKS = {
    "\n": "\\n",
    "\r": "\\r",
    "\x0b": "VT (U+000B)",
    "\x0c": "FF (U+000C)",
    "\x1c": "U+001C",
    "\x1d": "U+001D",
    "\x1e": "U+001E",
    "\x85": "NEL (U+0085)",
    "\u2028": "LINE SEPARATOR (U+2028)",
    "\u2029": "PARAGRAPH SEPARATOR (U+2029)",
}


_LINE_BREAK_RE = re.compile("[" + "".join(LINE_BREAKS) + "]")
_SPACED_RE = re.compile("[\n\r\x0b\x0c\u2028\u2029]")


def _holds_line_break(text: str, chars=LINE_BREAKS) -> bool:
    # One substring search per character (a memchr-like scan): some 40x faster than the
    # character-class regex on long joined texts.
    return any(ch in text for ch in chars)


#: The line breaks the ``space`` policy replaces: those that end a line for the Java tools
#: pycocoevalcap feeds (CoreNLP's lexer ends one at \n, \r, VT, FF, U+2028 and U+2029).
#: U+001C-1E and NEL end a line only for Python's ``str.splitlines``: the jar reads them inside
#: the line (as characters it drops, NEL as an ellipsis, all four kept inside URL- and
#: e-mail-like tokens), so they are kept for the tokenizer to read as the jar does
#: (docs/TOKENIZER.md, Known differences); strict mode refuses them with the others.
SPACED_LINE_BREAKS = "\n\r\x0b\x0c\u2028\u2029"
_TO_SPACE = str.maketrans(dict.fromkeys(SPACED_LINE_BREAKS, " "))

#: ``line_breaks`` policies: replace every line-break character by a space, or raise.
LINE_BREAK_POLICIES = ("space", "refuse")
#: Appended to the signature's ``tok`` field when a scored text held a line break (``space``).
LINE_BREAK_TAG = "+breaks=space"


def find_line_break(text: str) -> str | None:
    m = _LINE_BREAK_RE.search(text)
    return LINE_BREAKS[m.group()] if m else None


def space_line_breaks(text: str) -> str:
    """Every character of :data:`SPACED_LINE_BREAKS` replaced by one space."""
    return text.translate(_TO_SPACE)


def check_line_break_policy(policy: str) -> str:
    if policy not in LINE_BREAK_POLICIES:
        raise InputError(f"line_breaks={policy!r}: choose from {list(LINE_BREAK_POLICIES)}")
    return policy


def item_label(kind: str, i: int, ids: Sequence | None) -> str:
    return f"{kind} {i}" + (f" (id {ids[i]!r})" if ids is not None else "")


def check_text(
    text: object, where: str, *, allow_empty: bool = False, line_breaks: str = "refuse",
    empty_refused_by: str | None = None,
) -> str:
    """``text`` checked; with ``line_breaks="space"`` returned with its line breaks as spaces.
    ``empty_refused_by`` names a scorer that takes no empty text whatever ``allow_empty`` says,
    so its refusal does not offer that option."""
    if not isinstance(text, str):
        raise InputError(f"{where}: expected a string, got {type(text).__name__} ({text!r})")
    lb = find_line_break(text)
    if lb is not None:
        if check_line_break_policy(line_breaks) == "refuse":
            # Only strict mode reaches here, and every surface spells it the same two ways, so
            # the message names the option that was set rather than one to drop.
            raise InputError(
                f"{where} contains a line break ({lb}): {text[:60]!r}. Strict mode (line_breaks='refuse'; "
                "command line: --strict-line-breaks) refuses line breaks, which shift every later caption in "
                "line-based tools; by default each is read as a space, as pycocoevalcap does for \\n."
            )
        text = space_line_breaks(text)
    if not allow_empty and not text.strip():
        if empty_refused_by is not None:
            raise InputError(f"{where} is empty, and {empty_refused_by} cannot score empty text (even with "
                             "allow_empty/--allow-empty): drop the item, or score it without the learned metrics")
        raise InputError(f"{where} is empty. {EMPTY_WAY_OUT}")
    return text


#: The way out named whenever an empty candidate or reference is refused: the option covers both,
#: so following it always gets past the error.
EMPTY_WAY_OUT = ("Pass allow_empty=True (CLI: --allow-empty) to score empty or blank candidates and references as "
                 "pycocoevalcap does (an empty candidate scores 0 on every n-gram metric; an empty reference "
                 "matches nothing).")


def validate_corpus(
    candidates: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    ids: Sequence | None = None,
    allow_empty: bool = False,
    line_breaks: str = "space",
    need_references: bool = True,
    empty_refused_by: str | None = None,
) -> tuple[list[str], list[list[str]]]:
    """Check shapes and text; return plain lists. Raises :class:`InputError` naming the item.

    ``allow_empty`` accepts empty and blank candidates and references (scored as pycocoevalcap
    scores them); ``empty_refused_by`` names a scorer that refuses them regardless
    (:func:`check_text`).

    ``need_references=False`` (every requested metric is reference-free) accepts empty
    reference lists.

    ``line_breaks="space"`` (default) returns texts with every line-break character replaced by
    a space; ``"refuse"`` raises on the first one (see the module docstring)."""
    check_line_break_policy(line_breaks)
    if isinstance(candidates, str):
        raise InputError("candidates must be a list of strings, not a single string")
    candidates = list(candidates)
    references = list(references)
    if len(candidates) != len(references):
        raise InputError(
            f"{len(candidates)} candidates but {len(references)} reference lists; they must align"
        )
    if not candidates:
        raise InputError("no candidates to score")
    if ids is not None:
        if len(ids) != len(candidates):
            raise InputError(f"{len(ids)} ids for {len(candidates)} candidates")
        seen: dict = {}
        for i, key in enumerate(ids):
            if isinstance(key, str):
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError as e:  # a lone surrogate (e.g. "\\ud800" in JSON): no file can hold it
                    raise InputError(f"id of item {i} is not valid Unicode ({e.reason} at {e.start}): {key!r}") from None
            if key in seen:
                raise InputError(f"duplicate id {key!r} at items {seen[key]} and {i}")
            seen[key] = i
    plain, references = _all_plain(candidates, references, allow_empty)
    if plain:
        return candidates, references
    out_refs: list[list[str]] = []
    # references repeat across rows; check each distinct string once. ``ok`` maps an accepted
    # string to its returned form (line breaks spaced).
    ok: dict[str, str] = {}
    for i, cand in enumerate(candidates):
        if cand.__class__ is str and cand in ok:
            candidates[i] = ok[cand]
            continue
        new = check_text(cand, item_label("candidate", i, ids), allow_empty=allow_empty, line_breaks=line_breaks,
                         empty_refused_by=empty_refused_by)
        if new.strip():
            ok[cand] = new
        candidates[i] = new
    for i, refs in enumerate(references):
        if isinstance(refs, str):
            raise InputError(
                f"references for {item_label('item', i, ids)} must be a list of strings, got a string"
            )
        refs = list(refs)
        if not refs and need_references:
            raise InputError(f"{item_label('item', i, ids)} has no references")
        for j, ref in enumerate(refs):
            if ref.__class__ is str and ref in ok:
                refs[j] = ok[ref]
                continue
            new = check_text(ref, f"reference {j} of {item_label('item', i, ids)}", allow_empty=allow_empty,
                             line_breaks=line_breaks, empty_refused_by=empty_refused_by)
            ok[ref] = refs[j] = new
        out_refs.append(refs)
    return candidates, out_refs


def _all_plain(candidates: list, references: list, allow_empty: bool) -> tuple[bool, list]:
    """``(True, references as lists)`` when every text is a plain ``str`` with no line break and
    none is empty (or blank) unless ``allow_empty``: the item-by-item checks would then
    change nothing. Decided with C-level passes (``map``, one scan of the joined text).
    Otherwise ``(False, references)`` (reference sequences read once are returned as lists)
    and the item-by-item checks name the first offending item."""
    if set(map(type, candidates)) - {str} or set(map(type, references)) & {str}:
        return False, references
    try:
        refs = list(map(list, references))
    except TypeError:
        return False, references
    if min(map(len, refs), default=0) == 0:
        return False, refs
    flat = [r for rs in refs for r in rs]
    if set(map(type, flat)) - {str}:
        return False, refs
    if not allow_empty and not (all(map(str.strip, flat)) and all(map(str.strip, candidates))):
        return False, refs
    if _holds_line_break("\t".join(candidates)) or _holds_line_break("\t".join(flat)):
        return False, refs
    return True, refs


def has_line_break(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> bool:
    """Whether any candidate or reference holds a line break that the ``space`` policy
    replaces (:data:`SPACED_LINE_BREAKS`)."""
    search = _SPACED_RE.search
    try:  # one scan of the joined texts ("\t" is no line break)
        return _holds_line_break("\t".join(candidates), SPACED_LINE_BREAKS) or _holds_line_break(
            "\t".join(r for refs in references for r in refs), SPACED_LINE_BREAKS)
    except TypeError:  # a text that is not a str
        return any(search(c) for c in candidates) or any(search(r) for refs in references for r in refs)


def validate_images(images: Sequence, n: int, *, ids: Sequence | None = None) -> list[str]:
    """One existing image file per candidate, as path strings; an error names the first item
    whose image is missing, not a file, or not a path."""
    import os

    if isinstance(images, (str, bytes, os.PathLike)):
        raise InputError("images must be a list with one image path per candidate, not a single path")
    try:
        paths = list(images)
    except TypeError:
        raise InputError(f"images must be a list of image paths, got {type(images).__name__}") from None
    if len(paths) != n:
        raise InputError(f"{len(paths)} images for {n} candidates; give one image per candidate")
    out = []
    for i, p in enumerate(paths):
        if not isinstance(p, (str, os.PathLike)) or not str(p).strip():
            raise InputError(f"image of {item_label('candidate', i, ids)} is {p!r}, not a file path")
        if not os.path.isfile(p):
            what = "is not a file" if os.path.exists(p) else "does not exist"
            raise InputError(f"image of {item_label('candidate', i, ids)}: {os.fspath(p)!r} {what}")
        out.append(os.fspath(p))
    return out


# -- Unicode forms -------------------------------------------------------------------------------
UNICODE_FORMS = ("nfc",)
UNICODE_TAG = {"nfc": "+norm=nfc"}


def check_form(form: str | None) -> None:
    if form is not None and form not in UNICODE_FORMS:
        raise InputError(f"unknown Unicode normalisation {form!r}; choose one of {', '.join(UNICODE_FORMS)} (or none)")


def form_counts(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> tuple[int, int]:
    """(texts holding composed characters, texts holding decomposed ones); ASCII and texts
    that are both NFC and NFD count for neither."""
    if "".join(candidates).isascii() and "".join(r for refs in references for r in refs).isascii():
        return 0, 0  # one pass over the joined texts; most inputs are ASCII
    composed = decomposed = 0
    for text in (*candidates, *(r for refs in references for r in refs)):
        if text.isascii():
            continue
        nfc, nfd = unicodedata.is_normalized("NFC", text), unicodedata.is_normalized("NFD", text)
        composed += not nfd  # something that decomposes
        decomposed += not nfc  # something that composes
    return composed, decomposed


def mixed_message(composed: int, decomposed: int) -> str | None:
    """The warning for inputs that hold both forms; None when they do not."""
    if composed and decomposed:
        return (f"the inputs mix Unicode forms: {decomposed} text(s) hold decomposed characters (NFD, e.g. "
                f"'e' + U+0301) and {composed} composed ones (NFC, U+00E9); metrics compare code points, "
                "so such words do not match (as in pycocoevalcap). Pass normalize='nfc' (CLI --normalize nfc) "
                "to compose every text first; the signatures then say +norm=nfc.")
    return None


def mixed_forms(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> str | None:
    """A warning when some texts are composed (NFC, not NFD) and others decomposed (NFD, not
    NFC); None otherwise."""
    return mixed_message(*form_counts(candidates, references))


def normalize_corpus(candidates: Sequence[str], references: Sequence[Sequence[str]],
                     form: str) -> tuple[list[str], list[list[str]]]:
    f = form.upper()
    return ([unicodedata.normalize(f, c) for c in candidates],
            [[unicodedata.normalize(f, r) for r in refs] for refs in references])


# -- a scored batch's texts ----------------------------------------------------------------------
def prepare_texts(candidates, references, *, need_references: bool, ids, allow_empty: bool, line_breaks: str,
                  normalize: str | None) -> tuple[list[str], list[list[str]], str]:
    """Validated (and, if asked, normalised) candidates and references, with the suffix of the
    signatures' ``tok`` field that says how the texts were changed; warns (from the caller of
    ``capeval.score``) when the texts mix Unicode forms."""
    cands, refs = validate_corpus(
        candidates, references, ids=ids, allow_empty=allow_empty, line_breaks=line_breaks,
        need_references=need_references,
    )
    # Numbers differ from the unnormalised text only when a line break was there; say so then.
    changed = LINE_BREAK_TAG if line_breaks == "space" and has_line_break(candidates, references) else ""
    check_form(normalize)
    if normalize is not None:
        cands, refs = normalize_corpus(cands, refs, normalize)
        changed += UNICODE_TAG[normalize]  # the tok field carries every text normalisation
    elif (mixed := mixed_forms(cands, refs)) is not None:
        import warnings

        warnings.warn(mixed, UserWarning, stacklevel=4)
    return cands, refs, changed
