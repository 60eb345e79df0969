"""Building a benchmark's table by name: the loader, its errors named, strict line breaks.

Kept apart from ``capeval.data`` so that modules of this package (``status``) can load tables
without importing the package itself.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import CapevalError, InputError
from ..validation import check_line_break_policy
from ._common import resolve_root
from .records import CorrelationTable, PairwiseTable, SystemTable
from .registry import get_spec


def load_table(name: str, root: Path | str | None = None, *, line_breaks: str = "space",
               **options) -> CorrelationTable | PairwiseTable | SystemTable:
    """:func:`capeval.data.load`."""
    spec = get_spec(name)
    check_line_break_policy(line_breaks)
    base = resolve_root(root, spec)
    try:
        table = spec.load_fn()(base, **options)
    except CapevalError:
        raise
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, UnicodeDecodeError) as e:
        # A data file of an unexpected shape (truncated, edited, another version): name the
        # benchmark and where to look instead of a traceback from inside a loader.
        raise InputError(f"{name}: the data under {base} are malformed ({type(e).__name__}: {e}). "
                         "`capeval data verify` compares them with the packaged checksums.") from e
    refuse_line_breaks(table, name, line_breaks)
    return table


def refuse_line_breaks(table, name: str, line_breaks: str) -> None:
    """Strict mode: a table holding a line break is refused, naming the first."""
    check_line_break_policy(line_breaks)
    if line_breaks == "refuse" and table.line_breaks:
        first = table.line_breaks[0]
        raise InputError(
            f"{first.where} contains a line break ({first.char}): {first.text[:60]!r}; "
            f"{len(table.line_breaks)} text(s) of {name} hold one. Strict mode (--strict-line-breaks, "
            "line_breaks='refuse') refuses them; by default each is read as a space and the benchmark "
            f"signature says breaks:space:{len(table.line_breaks)}.")
