"""Plain record types every benchmark loader returns.

Loaders differ only in how they read files; the meta-evaluation code (``capeval.stats``,
``capeval bench``) consumes these three shapes. ``protocol`` holds every choice that
changes a number (reference rule, label source, seed, text form) and goes into signatures.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..validation import LINE_BREAKS, SPACED_LINE_BREAKS, check_text, space_line_breaks

# One regex pass instead of per-character Python loops: tables hold up to ~300k strings. Only
# the characters read as a space are counted: U+001C-1E and NEL stay in the text for the
# tokenizer to read as the jar does, so counting them would report a change never made.
_SUSPECT = re.compile("[" + SPACED_LINE_BREAKS + "]")


def _check(text, where: str) -> None:
    if not isinstance(text, str):
        check_text(text, where)
    if not text.strip():
        # not check_text's message: it offers --allow-empty, which no benchmark surface has
        raise InputError(f"{where} is empty; every row needs a caption to set against its human judgement")


@dataclass(frozen=True)
class LineBreak:
    """A table text that held a line break, as the file gave it (strict mode names the first)."""

    where: str
    char: str  # LINE_BREAKS' name of the first line-break character
    text: str


class _Reader:
    """Reads a table's texts as published files hold them, the same way for every loader:
    each line-break character becomes a space (as ``capeval score`` does by default) and is
    recorded, so that the protocol can count them and strict mode can refuse them; an empty
    reference is dropped and counted (a row left with none is an error).

    ``row(i)`` names row ``i`` in messages, e.g. ``row 3 (group 'img1')``.

    A table keeps ``breaks`` as its ``line_breaks`` attribute, for strict mode
    (``capeval.data.load(..., line_breaks="refuse")``) to name the first. It is no dataclass
    field: ``dataclasses.replace`` and code walking a table's per-row fields must not see it."""

    def __init__(self, name: str, row: Callable[[int], str]) -> None:
        self.name = name
        self.row = row
        self.breaks: list[LineBreak] = []
        self.empty_refs = 0

    def _text(self, text, where: Callable[[], str]):
        m = _SUSPECT.search(text) if isinstance(text, str) else None
        if m is None:
            return text
        self.breaks.append(LineBreak(f"{self.name}: {where()}", LINE_BREAKS[m.group()], text))
        return space_line_breaks(text)

    def candidates(self, texts: list, what: str = "candidate") -> list:
        out = list(texts)
        for i, t in enumerate(out):
            if isinstance(t, str) and _SUSPECT.search(t):
                out[i] = self._text(t, lambda: f"{what} of {self.row(i)}")  # noqa: B023 - called at once
        return out

    def references(self, references: list) -> list:
        """Lists with nothing to change are kept as they are (loaders share one list among an
        image's rows, and tables hold up to ~300k texts)."""
        out = []
        for i, refs in enumerate(references):
            if isinstance(refs, str) or not len(refs):
                out.append(refs)  # _check_rows names the row
                continue
            if all(isinstance(r, str) and r.strip() and not _SUSPECT.search(r) for r in refs):
                out.append(refs)
                continue
            kept = []
            for j, ref in enumerate(refs):
                ref = self._text(ref, lambda: f"reference {j} of {self.row(i)}")  # noqa: B023 - called at once
                if isinstance(ref, str) and not ref.strip():
                    self.empty_refs += 1
                    continue
                kept.append(ref)
            if not kept:
                raise InputError(f"{self.name}: every reference of {self.row(i)} is empty")
            out.append(kept)
        return out

    def protocol(self, protocol: dict[str, str]) -> dict[str, str]:
        """``protocol`` plus what was read differently from the file. An entry written by an
        earlier read is kept: a ``dataclasses.replace`` copy re-reads texts already changed."""
        out = dict(protocol)
        if self.breaks:
            out["breaks"] = f"space:{len(self.breaks)}"
        if self.empty_refs:
            out["empty_refs"] = f"dropped:{self.empty_refs}"
        return out


@dataclass
class DatasetInfo:
    """One line of ``capeval data list``."""

    name: str
    kind: str  # "correlation" | "pairwise" | "system"
    folder: str  # folder under the data root
    present: bool
    counts: dict[str, int] = field(default_factory=dict)
    #: "ok" (hashed), "present" (not hashed), "<folder>: MISMATCH (…)", "<folder>: missing n of m", "no data root"
    checksum: str = "unchecked"
    description: str = ""
    protocol: dict[str, str] = field(default_factory=dict)  # of the default table, for signatures


@dataclass
class CorrelationTable:
    """Caption-level human scores: one row per (candidate, references, rating).

    ``references=None`` marks a split that ships no references (Polaris-exp): only
    reference-free metrics can score it, and its protocol must say ``refs: none``.
    """

    name: str
    candidates: list[str]
    references: list[list[str]] | None
    human: np.ndarray
    groups: list[str]
    statistic: str
    protocol: dict[str, str]
    extra: dict[str, Any] = field(default_factory=dict)
    #: image file name of each row (relative to a user's image directory, e.g.
    #: ``COCO_val2014_000000391895.jpg``); None when the benchmark does not say. Image-based
    #: metrics read ``images``; text metrics ignore it.
    images: list[str | None] | None = None

    def __post_init__(self) -> None:
        self.human = _real_ratings(self.name, self.human)
        n = len(self.candidates)
        if self.references is None:
            if self.protocol.get("refs") != "none":
                raise InputError(f"{self.name}: a table without references must say refs=none in its protocol")
        else:
            _check_len(self.name, "references", self.references, n)
        _check_len(self.name, "human", self.human, n)
        _check_len(self.name, "groups", self.groups, n)
        if self.images is not None:
            _check_len(self.name, "images", self.images, n)
        bad = np.flatnonzero(~np.isfinite(self.human))
        if bad.size:
            i = int(bad[0])
            raise InputError(
                f"{self.name}: human rating of row {i} (group {self.groups[i]!r}) is "
                f"{float(self.human[i])!r}; {bad.size} non-finite rating(s) in all"
            )
        reader = _Reader(self.name, lambda i: f"row {i} (group {self.groups[i]!r})")
        self.candidates = reader.candidates(self.candidates)
        if self.references is not None:
            self.references = reader.references(self.references)
        self.protocol, self.line_breaks = reader.protocol(self.protocol), reader.breaks
        if self.references is None:
            for i, cand in enumerate(self.candidates):
                _check(cand, f"{self.name}: candidate of row {i} (group {self.groups[i]!r})")
        else:
            _check_rows(self.name, self.candidates, self.references, self.groups)

    def __len__(self) -> int:
        return len(self.candidates)


@dataclass
class PairwiseTable:
    """Two candidates per row sharing one reference list; label 0 = a preferred, 1 = b.

    A label of 0.5 marks a human tie; only loaders whose protocol keeps ties emit it
    (``protocol["ties"]`` says so).
    """

    name: str
    candidates_a: list[str]
    candidates_b: list[str]
    references: list[list[str]]
    labels: np.ndarray
    categories: list[str]
    protocol: dict[str, str]
    extra: dict[str, Any] = field(default_factory=dict)
    #: image file name of each row (relative to a user's image directory, e.g.
    #: ``COCO_val2014_000000391895.jpg``); None when the benchmark does not say. Image-based
    #: metrics read ``images``; text metrics ignore it.
    images: list[str | None] | None = None

    def __post_init__(self) -> None:
        self.labels = _real_ratings(self.name, self.labels)
        n = len(self.candidates_a)
        _check_len(self.name, "candidates_b", self.candidates_b, n)
        _check_len(self.name, "references", self.references, n)
        _check_len(self.name, "labels", self.labels, n)
        _check_len(self.name, "categories", self.categories, n)
        if self.images is not None:
            _check_len(self.name, "images", self.images, n)
        ok = np.isin(self.labels, (0.0, 0.5, 1.0))
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise InputError(f"{self.name}: label of pair {i} is {float(self.labels[i])!r}; expected 0, 1 or 0.5")
        groups = [str(c) for c in self.categories]
        reader = _Reader(self.name, lambda i: f"pair {i} ({groups[i]})")
        self.candidates_a = reader.candidates(self.candidates_a, "candidate a")
        self.candidates_b = reader.candidates(self.candidates_b, "candidate b")
        self.references = reader.references(self.references)
        self.protocol, self.line_breaks = reader.protocol(self.protocol), reader.breaks
        _check_rows(self.name, self.candidates_a, self.references, groups)
        for i, c in enumerate(self.candidates_b):
            _check(c, f"{self.name}: candidate b of pair {i} ({groups[i]})")

    def __len__(self) -> int:
        return len(self.candidates_a)


@dataclass
class SystemTable:
    """Several systems' captions for the same images, aligned with ``references``."""

    name: str
    systems: dict[str, list[str]]
    references: list[list[str]]
    image_ids: list[str]
    human: dict[str, float] | None
    protocol: dict[str, str]
    extra: dict[str, Any] = field(default_factory=dict)
    #: image file name of each row (relative to a user's image directory, e.g.
    #: ``COCO_val2014_000000391895.jpg``); None when the benchmark does not say. Image-based
    #: metrics read ``images``; text metrics ignore it.
    images: list[str | None] | None = None

    def __post_init__(self) -> None:
        n = len(self.image_ids)
        _check_len(self.name, "references", self.references, n)
        _check_unique(self.name, "image id", self.image_ids)
        if self.images is not None:
            _check_len(self.name, "images", self.images, n)
        for sys_id, caps in self.systems.items():
            _check_len(self.name, f"system {sys_id!r}", caps, n)
        reader = _Reader(self.name, lambda i: f"row {i} (group {self.image_ids[i]!r})")
        self.systems = {s: reader.candidates(caps, f"system {s!r}") for s, caps in self.systems.items()}
        self.references = reader.references(self.references)
        self.protocol, self.line_breaks = reader.protocol(self.protocol), reader.breaks
        for sys_id, caps in self.systems.items():
            _check_rows(self.name, caps, self.references, self.image_ids, what=f"system {sys_id!r}")

    def __len__(self) -> int:
        return len(self.image_ids)


def _real_ratings(name: str, values) -> np.ndarray:
    """Ratings as floats; a complex or non-numeric one is an error naming its row (numpy would
    turn ``1j`` into 0.0 with only a warning)."""
    for i, v in enumerate(values):
        if isinstance(v, (complex, np.complexfloating)):
            raise InputError(f"{name}: human rating of row {i} is {v!r}, not a real number")
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError) as e:
        raise InputError(f"{name}: human ratings are not all real numbers ({e})") from None


def _check_len(name: str, what: str, seq, n: int) -> None:
    if len(seq) != n:
        raise InputError(f"{name}: {what} has {len(seq)} entries for {n} rows")


def _check_unique(name: str, what: str, ids) -> None:
    seen: dict = {}
    for i, key in enumerate(ids):
        if key in seen:
            raise InputError(f"{name}: duplicate {what} {key!r} at rows {seen[key]} and {i}")
        seen[key] = i


def _check_rows(name, candidates, references, groups, what: str = "candidate") -> None:
    for i, cand in enumerate(candidates):
        where = f"{name}: {what} of row {i} (group {groups[i]!r})"
        _check(cand, where)
        refs = references[i]
        if isinstance(refs, str) or not len(refs):
            raise InputError(f"{where} has no reference list")
        for j, ref in enumerate(refs):
            _check(ref, f"{name}: reference {j} of row {i} (group {groups[i]!r})")
