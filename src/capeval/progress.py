"""Progress within one metric family: long loops report how many of their units are done.

``capeval.score`` installs a callback for the family it is running (:func:`reporting`); the
loops that can take minutes (BERTScore's encoder batches, SPICE's parses) call :func:`report`
every chunk. The callback lives in a :class:`contextvars.ContextVar`, so concurrent ``score``
calls in different threads never see each other's progress, and code that runs outside a
``score`` call reports to nobody at the cost of one lookup.

A step that makes a run wait for another reason than its units (a one-time conversion of a
resource) says what it is doing with :func:`note`: to the listener installed by
:func:`noting` (the CLI prints it), else to the ``capeval`` logger.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: ``callback(done, total)``; units are the reporting loop's own (sentences, pairs).
ChunkCallback = Callable[[int, int], None]

_current: ContextVar[ChunkCallback | None] = ContextVar("capeval_progress", default=None)
_notes: ContextVar[Callable[[str], None] | None] = ContextVar("capeval_notes", default=None)


@contextmanager
def reporting(callback: ChunkCallback | None) -> Iterator[None]:
    """Send :func:`report` calls made inside the ``with`` block (same thread) to ``callback``."""
    token = _current.set(callback)
    try:
        yield
    finally:
        _current.reset(token)


def report(done: int, total: int) -> None:
    """Tell the current listener, if any, that ``done`` of ``total`` units are finished."""
    cb = _current.get()
    if cb is not None:
        cb(done, total)


@contextmanager
def noting(callback: Callable[[str], None] | None) -> Iterator[None]:
    """Send :func:`note` calls made inside the ``with`` block (same thread) to ``callback``."""
    token = _notes.set(callback)
    try:
        yield
    finally:
        _notes.reset(token)


def note(message: str) -> None:
    """Say what a long step that is not a count of units is doing (plain text, never markup)."""
    cb = _notes.get()
    if cb is not None:
        cb(message)
    else:
        import logging

        logging.getLogger("capeval").info(message)
