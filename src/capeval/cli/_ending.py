"""How the ``capeval`` command ends: with its own status, whatever user code did.

Plug-ins and user metrics run in the command's process (and in its ``--jobs`` workers); they
are not moved to a process of their own (docs/RELIABILITY.md, *User code*). What they could do
to end the command silently is closed here and in :func:`capeval.api.contained`:

- ``os._exit(n)`` while a third-party metric runs in this process raises ``SystemExit`` instead, which ``contained`` turns into an error naming the metric:
  the command fails with status 2 and writes nothing. Everywhere else (a child process, capeval
  itself) ``os._exit`` is Python's;
- a worker that dies anyway (a crash, a worker started afresh, a Ray worker) is an error naming
  the run's third-party metrics (:func:`worker_died`);
- after a command returns its status, the process ends with it at once (:func:`finish`): atexit
  handlers run and the streams are flushed, but threads user code left running are not waited
  for.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .. import _process


def run(app: Callable[[], object]) -> None:
    """Run ``app`` (the typer application) and end the process with its status."""
    _process.guard_exit()
    plain_warnings()
    finish(call(app))


def plain_warnings() -> None:
    """Warnings on the command line as ``warning: <Category>: <message>``: Python's default
    format adds the file and source line of the ``warnings.warn`` call, capeval's internals
    rather than anything the user can act on."""
    import warnings

    def fmt(message, category, filename, lineno, line=None) -> str:  # noqa: ARG001 - warnings' signature
        return f"warning: {category.__name__}: {message}\n"

    warnings.formatwarning = fmt


def call(app: Callable[[], object]) -> int:
    """``app()``'s exit status (click ends a command with ``SystemExit``)."""
    try:
        app()
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return int(e.code or 0)
        print(e.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BaseException:  # noqa: BLE001 - capeval's own bug: shown as Python would show it
        import traceback

        traceback.print_exc()
        return 1
    return 0


def finish(status: int) -> None:
    """End this process with ``status`` now: atexit handlers run and the streams are flushed;
    threads still running are not waited for (a non-daemon thread of a plug-in would otherwise
    keep the finished command alive)."""
    import atexit

    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001, S110 - a closed pipe: nothing more can be said
                pass
        _process.exit_now(status)


#: Ray's exceptions for a worker, actor or node that died (matched by name: ray is optional)
_RAY_DEATHS = frozenset({"WorkerCrashedError", "ActorDiedError", "NodeDiedError", "LocalRayletDiedError",
                         "OwnerDiedError", "ObjectLostError", "RaySystemError"})


@contextmanager
def worker_died(plan) -> Iterator[None]:
    """A worker process that died (``BrokenProcessPool``, Ray's ``WorkerCrashedError``) as a
    :class:`~capeval.errors.WorkerDied` naming the plan's third-party metrics, whose code is
    the likely cause (``os._exit``, a crash), or else every metric of the run."""
    from concurrent.futures import BrokenExecutor

    try:
        yield
    except Exception as e:
        kind = type(e)
        if not (isinstance(e, BrokenExecutor)
                or (kind.__module__.split(".")[0] == "ray" and kind.__name__ in _RAY_DEATHS)):
            raise
        from ..errors import WorkerDied
        from ..metrics.registry import third_party

        suspects = [f"{f.family!r} ({who})" for f in plan.families if (who := third_party(f.family))]
        if suspects:
            why = (f"scoring a run with third-party code, metric {', '.join(suspects)}: os._exit, a crash or "
                   "a signal in a plug-in's or user metric's code ends a worker")
        else:
            why = (f"scoring {', '.join(plan.metrics)}: killed (out of memory?) or crashed; the same command "
                   "resumes from the finished chunks")
        raise WorkerDied(f"a worker process died ({kind.__name__}) {why}") from None
