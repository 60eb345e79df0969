"""Worker processes that end when the process that started them dies.

A ``--jobs`` run's workers are children of the forkserver, not of the run, so when the run is
killed (SIGKILL: no cleanup runs) nothing tells them: a worker blocked writing its result to a
pipe nobody reads waits forever, and with it the forkserver and the resource tracker. Each
worker therefore watches the run's process from a daemon thread and exits once it is gone: on
Linux through a pidfd (woken the moment it exits, immune to pid reuse), elsewhere by polling.
"""
from __future__ import annotations

import os
import threading

from .. import _process

POLL_SECONDS = 0.5


def watch_parent(pid: int) -> None:
    """Pool initializer: exit this process (no cleanup, as the run itself could not) when
    process ``pid`` ends. The worker runs nothing but capeval's tasks, so a plug-in's
    ``os._exit`` is contained here as in the command (:func:`capeval._process.guard_exit`): an
    error naming the metric instead of a dead worker."""
    _process.guard_exit()
    threading.Thread(target=_wait_then_exit, args=(pid,), name="capeval-parent-watch", daemon=True).start()


def _wait_then_exit(pid: int) -> None:
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        import select

        select.select([fd], [], [])  # readable once the process has exited
    else:
        import time

        while _process.pid_alive(pid):
            time.sleep(POLL_SECONDS)
    _process.exit_now(1)  # the guarded os._exit would raise instead while a plug-in runs
