"""The judges' prompts, as published, and their digests (part of signatures and cache keys).

CLAIR (Chan et al., EMNLP 2023; github.com/DavidMChan/clair, ``clair.py``): candidate and
reference captions as ``- text`` lines, and a request for JSON with ``score`` (0--100) and
``reason``. FLEUR and RefFLEUR (Lee et al., ACL 2024; github.com/Yebin46/FLEUR, ``fleur.py``
and ``reffleur.py``): the grading criteria and a request for a real number from 0.0 to 1.0;
RefFLEUR adds the references, one a line. The wording below is the published wording; the
tests check the digests, so a changed letter is a new prompt under a new signature.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence

CLAIR_TEMPLATE = (
    "You are trying to tell if a candidate set of captions is describing the same image as a reference set "
    "of captions.\n"
    "Candidate set:\n{candidates}"
    "Reference set:\n{references}"
    "On a precise scale from 0 to 100, how likely is it that the candidate set is describing the same image "
    "as the reference set? (JSON format, with a key \"score\", value between 0 and 100, and a key \"reason\" "
    "with a string value.)\n"
)

_FLEUR_HEAD = (
    "Your task is to evaluate and rate the {what} on a scale of 0.0 to 1.0 based on the given Grading "
    "Criteria. (Print Real Number Score ONLY)\n\n"
    "Grading Criteria:\n\n"
    "0.0: The caption does not describe the image at all.\n"
    "1.0: The caption accurately and clearly describes the image.\n\n"
)
FLEUR_TEMPLATE = _FLEUR_HEAD.format(what="caption") + "Caption: {candidate}\n\nScore(Choose a rating from 0.0 to 1.0):"
REFFLEUR_TEMPLATE = (_FLEUR_HEAD.format(what="candidate caption")
                     + "Reference Captions: {references}\n\nCandidate Caption: {candidate}\n\n"
                     "Score(Choose a rating from 0.0 to 1.0):")


def digest(template: str) -> str:
    """Twelve hex digits of the template's SHA-256: the ``prompt`` signature field."""
    return hashlib.sha256(template.encode("utf-8")).hexdigest()[:12]


def clair_prompt(candidate: str, references: Sequence[str]) -> str:
    # Braces in captions are text: substitution is by position, never str.format on user text.
    cands = f"- {candidate}\n"
    refs = "".join(f"- {r}\n" for r in references)
    head, rest = CLAIR_TEMPLATE.split("{candidates}")
    mid, tail = rest.split("{references}")
    return head + cands + mid + refs + tail


def fleur_prompt(candidate: str, references: Sequence[str] | None = None) -> str:
    """FLEUR's prompt, or RefFLEUR's when ``references`` are given (one a line, as published).
    FLEUR collapses runs of white space in the caption; so does this."""
    candidate = " ".join(candidate.split())
    if references is None:
        head, tail = FLEUR_TEMPLATE.split("{candidate}")
        return head + candidate + tail
    head, rest = REFFLEUR_TEMPLATE.split("{references}")
    mid, tail = rest.split("{candidate}")
    return head + "\n".join(references) + mid + candidate + tail
