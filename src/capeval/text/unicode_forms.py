"""Unicode normalisation forms of the input texts.

"é" can be one code point (U+00E9, NFC, what keyboards and most files produce) or two ("e" +
U+0301, NFD, what some macOS file systems and tools produce). Every metric compares code
points, as pycocoevalcap does, so an NFD candidate against NFC references shares no n-gram at
those words (BLEU-4 0.819 falls to 7e-5). capeval keeps that default, which is pycocoevalcap's
number; it warns when the inputs mix the two forms, and ``normalize="nfc"`` (CLI
``--normalize nfc``) composes every text first, which the signatures' ``tok`` field then
shows (``+norm=nfc``).
"""
from __future__ import annotations

import unicodedata
from collections.abc import Sequence

FORMS = ("nfc",)
TAG = {"nfc": "+norm=nfc"}


def check_form(form: str | None) -> None:
    from ..errors import InputError

    if form is not None and form not in FORMS:
        raise InputError(f"unknown Unicode normalisation {form!r}; choose one of {', '.join(FORMS)} (or none)")


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
