"""Printing through Rich without reading user text as markup.

Ids, paths, captions, option values and exception messages may hold square brackets (``[b]x``,
an extra in ``pip install -e '.[bertscore]'``, ``[/b]``); Rich would take them for markup, dropping them or raising
MarkupError. Every message a command prints goes through these helpers, which hand Rich
``Text`` objects (never parsed) or escaped strings.
"""
from __future__ import annotations

from rich.markup import escape
from rich.text import Text

__all__ = ["error", "escape", "literal", "say", "terminal_console"]


def literal(text: object, style: str = "") -> Text:
    """``text`` as it is, for a table cell, a title or a status line."""
    return Text(str(text), style=style)


def say(console, text: object, **kwargs) -> None:
    """Print ``text`` as it is."""
    kwargs.setdefault("highlight", False)
    console.print(literal(text), **kwargs)


def error(console, text: object) -> None:
    """``error: <text>`` with the prefix in red and the text as it is, never broken into lines
    by Rich (the terminal wraps it on screen): an install command in it pastes whole."""
    console.print(Text.assemble(("error:", "red"), " ", str(text)), highlight=False, soft_wrap=True)


def terminal_console(wide_when_piped: int = 1000):
    """A console on stdout that Rich lays out and wraps at the terminal's width ($COLUMNS, else
    the terminal's), so no word is cut by a terminal narrower than the text was wrapped for.
    Into a pipe or a file with no $COLUMNS it is ``wide_when_piped`` columns wide: a table row
    stays one line for grep."""
    import os
    import sys

    from rich.console import Console

    if "COLUMNS" not in os.environ and not sys.stdout.isatty():
        return Console(width=wide_when_piped, highlight=False)
    return Console(highlight=False)
