"""Whether capeval owns this interpreter, and which third-party metric it is running.

``owns_interpreter`` is true only in the ``capeval`` command (set by
:func:`capeval.cli.main.main` before any command runs), whose process runs nothing but
capeval: there capeval may change process-wide state of other libraries to start faster
(:func:`capeval.scenegraph.parser.load_spacy`). In a user's process, where capeval is a
library, it stays False and capeval leaves other libraries as their own imports would leave
them.

:func:`running` records the plug-in or user metric whose code runs at the moment, with the
process it runs in (a forked copy inherits the record but not the pid), so the command can
tell that an ``os._exit`` comes from it (``capeval.cli._ending``; docs/RELIABILITY.md, *User
code*). :func:`pid_alive` tells whether another process still runs (a run's owner, a worker's
parent).
"""
from __future__ import annotations

import os

owns_interpreter = False

_running: tuple[int, str] | None = None


def running(label: str) -> tuple[int, str] | None:
    """Record that this process runs the third-party metric ``label`` (its name and who wrote
    it); returns the record it replaces, for :func:`restore`."""
    global _running
    previous, _running = _running, (os.getpid(), label)
    return previous


def restore(previous: tuple[int, str] | None) -> None:
    """Put back the record :func:`running` replaced (None: no third-party code runs)."""
    global _running
    _running = previous


_real_exit = os._exit


def guard_exit() -> None:
    """In a process that runs nothing but capeval (the command; a worker of its own): from now
    on ``os._exit`` called while a third-party metric runs in this process raises
    ``SystemExit`` instead, which capeval names as that metric's error; anywhere else (a child
    process, capeval's own code) it is Python's. Never done in a user's process."""
    os._exit = _guarded_exit  # type: ignore[assignment]


def _guarded_exit(status: int) -> None:
    now = _running
    if now is not None and now[0] == os.getpid():
        raise SystemExit(f"os._exit({status!r})")
    _real_exit(status)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (a process of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def exit_now(status: int) -> None:
    """Python's ``os._exit``, whoever replaced it."""
    _real_exit(status)
