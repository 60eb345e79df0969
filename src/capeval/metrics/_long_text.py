"""What an encoder family does with text longer than its window, said out loud (docs/LONG_CAPTIONS.md).

Every encoder family takes a ``long_text`` option: ``truncate`` (the default: the reference
implementations' behaviour, numbers unchanged) or a mode that reads the whole text. Whatever the
mode, the texts and tokens it cut are counted per row, one count per text occurrence (a reference
shared by five rows counts five times), so the counts add up the same in memory, in chunks and in
any grouping. A run that cut anything warns, reports ``details[family]["long_text"]`` and carries
``trunc:N`` (N texts cut) as the last field of its signature; a run that cut nothing has no
``trunc`` field, so its signature is the one it always had. A mode other than ``truncate`` adds
``long:<mode>``.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputError
from ..result import MetricScores
from .statistics import RowMean, Statistics, check_default_rule

TRUNCATE = "truncate"
#: Per-row columns of the statistics (ints, summed exactly in any grouping).
CUT_TEXTS = "_long_cut_texts"
CUT_TOKENS = "_long_cut_tokens"


class LongTextWarning(UserWarning):
    """Some text was longer than an encoder's window and was cut (``long_text=truncate``), or
    lies outside a learned model's training range."""


def check_mode(family: str, value: object, modes: Sequence[str]) -> str:
    """``value`` if it is one of ``modes``, else an error naming the family and the modes."""
    if not isinstance(value, str) or value not in modes:
        raise InputError(f"{family}: long_text must be one of {', '.join(modes)}, got {value!r}")
    return value


def row_cuts(cut: Mapping[str, int], candidates: Sequence[str],
             references: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Per row: how many of its texts (candidate and references) were cut, and how many tokens,
    from ``cut`` (tokens cut per distinct text; texts not in it were not cut)."""
    n = len(candidates)
    texts = np.zeros(n, dtype=np.int64)
    tokens = np.zeros(n, dtype=np.int64)
    if not cut:
        return texts, tokens
    for i, (c, refs) in enumerate(zip(candidates, references)):
        for t in (c, *refs):
            k = cut.get(t, 0)
            if k > 0:
                texts[i] += 1
                tokens[i] += k
    return texts, tokens


def summary(mode: str, window: int | None, texts: int, tokens: int) -> dict[str, Any]:
    return {"mode": mode, "window": window, "cut_texts": int(texts), "cut_tokens": int(tokens)}


def message(family: str, texts: int, tokens: int, window: int | None, unit: str = "tokens") -> str:
    return (f"{family}: {texts} text(s) longer than the encoder's window of {window} {unit} were cut "
            f"({tokens} {unit} dropped, long_text=truncate); counted in the signature (trunc:{texts}) and "
            f"result.details[{family!r}]['long_text']; long_text=windows reads the whole text "
            "(docs/LONG_CAPTIONS.md)")


def signature_fields(mode: str, cut_texts: int) -> dict[str, object]:
    """The fields a family adds last: ``long`` when not truncating, ``trunc`` when something was cut."""
    out: dict[str, object] = {}
    if mode != TRUNCATE:
        out["long"] = mode
    if cut_texts > 0:
        out["trunc"] = int(cut_texts)
    return out


def finish(out: MetricScores, family: str, mode: str, window: int | None, texts: np.ndarray,
           tokens: np.ndarray, *, warn: bool = True, unit: str = "tokens") -> MetricScores:
    """``out`` with the long-text fields, details and per-row counts (for :func:`statistics`);
    warns when something was cut and ``warn``."""
    n_texts, n_tokens = int(texts.sum()), int(tokens.sum())
    out.signature_fields.update(signature_fields(mode, n_texts))
    out.details["long_text"] = summary(mode, window, n_texts, n_tokens)
    if not warn:  # called by statistics(), which takes the rows out again
        out.details["_long_rows"] = (texts, tokens)
    elif n_texts:
        warnings.warn(message(family, n_texts, n_tokens, window, unit), LongTextWarning, stacklevel=4)
    return out


class LongTextMean(RowMean):
    """:class:`RowMean` that also sums the per-row cut counts into the ``long_text`` details and
    the ``trunc`` signature field, so a streamed run reports the whole input's counts."""

    def __init__(self, outputs: Sequence[str], family: str, mode: str, window: int | None,
                 unit: str = "tokens", empty: float = math.nan):
        super().__init__(outputs, empty)
        self.family, self.mode, self.window, self.unit = family, mode, window, unit

    def _counts(self, st: Statistics) -> tuple[int, int]:
        if CUT_TEXTS not in st.rows:
            return 0, 0
        return int(st.rows[CUT_TEXTS].sum()), int(st.rows[CUT_TOKENS].sum())

    def details(self, st: Statistics) -> dict[str, Any]:
        texts, tokens = self._counts(st)
        return {"long_text": summary(self.mode, self.window, texts, tokens)}

    def fields(self, st: Statistics) -> dict[str, object]:
        return signature_fields(self.mode, self._counts(st)[0])

    def warning(self, st: Statistics) -> Warning | None:
        texts, tokens = self._counts(st)
        return LongTextWarning(message(self.family, texts, tokens, self.window, self.unit)) if texts else None

    def __eq__(self, other: object) -> bool:
        return RowMean.__eq__(self, other) and all(
            getattr(self, k) == getattr(other, k) for k in ("family", "mode", "window", "unit"))

    def __hash__(self) -> int:
        return hash((type(self), self.outputs, self.mode))


def statistics(metric, family: str, mode: str, candidates, references, *, empty: float = math.nan,
               **kw) -> Statistics:
    """A family's statistics with the cut counts as per-row columns and without the
    data-dependent ``trunc`` field (parts of one run must agree on their fields); no warning
    here: the merged run warns once (``LongTextMean.warning``). ``empty``: the corpus value of
    no rows."""
    out = metric.compute(candidates, references, _warn_long=False, **kw)
    texts, tokens = out.details.pop("_long_rows")
    agg = LongTextMean(tuple(out.per_caption), family, mode, out.details["long_text"]["window"], empty=empty)
    fields = {k: v for k, v in out.signature_fields.items() if k != "trunc"}
    st = Statistics(len(candidates), agg, rows={**out.per_caption, CUT_TEXTS: texts, CUT_TOKENS: tokens},
                    fields=fields, details=out.details)
    check_default_rule(family, MetricScores(out.corpus, out.per_caption), st)
    return st


__all__ = ["CUT_TEXTS", "CUT_TOKENS", "LongTextMean", "LongTextWarning", "TRUNCATE", "check_mode", "finish",
           "row_cuts", "signature_fields", "statistics"]
