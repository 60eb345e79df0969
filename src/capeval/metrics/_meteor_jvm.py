"""One long-lived METEOR 1.5 JVM speaking the jar's ``-stdio`` line protocol.

The jar answers every input line with one output line (``EVAL`` with N stats: N + 1 lines),
so a whole batch can be written before anything is read. Writing happens on a separate
thread: if the batch is larger than the OS pipe buffers, a single thread that writes
everything first would block forever while the JVM blocks writing answers nobody reads.

Lines are read by a daemon thread into a queue so that every wait has a timeout; stderr is
drained into a bounded buffer (an undrained stderr pipe can stall the JVM) and quoted in
every error.

Stopping never waits without a bound: the JVM runs in its own process group, which is sent
SIGKILL (it also ends a SIGSTOPped process, which SIGTERM cannot) before any pipe is closed,
and a pipe a blocked writer thread may still hold is closed on a helper thread with a bound.
"""
from __future__ import annotations

import collections
import os
import queue
import signal
import subprocess
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path

from ..errors import ExternalToolError

#: Flags of pycocoevalcap's wrapper (docs/METRICS.md, METEOR 1.5). The locale properties keep the jar
#: from printing decimal commas under e.g. a German locale.
STDIO_ARGS = ("-", "-", "-stdio", "-l", "en", "-norm")
LOCALE_PROPS = ("-Duser.language=en", "-Duser.country=US")

_EOF = None  # queue sentinel: stdout closed


class JVMCrashed(ExternalToolError):
    """The JVM exited while answers were pending; a restart may help."""


class JVMTimeout(ExternalToolError):
    """The JVM gave no answer in time (hung, stopped or overloaded); it has been killed."""


def meteor_command(java: str, jar: Path, max_heap: str = "2G", args: Sequence[str] = STDIO_ARGS) -> list[str]:
    return [java, f"-Xmx{max_heap}", *LOCALE_PROPS, "-jar", jar.name, *args]


def _pump_stdout(stream, q: queue.Queue) -> None:
    try:
        for raw in iter(stream.readline, b""):
            q.put(raw)
    except (OSError, ValueError):
        pass
    finally:
        q.put(_EOF)


def _pump_stderr(stream, buf: collections.deque) -> None:
    try:
        for raw in iter(stream.readline, b""):
            buf.append(raw.decode("utf-8", "replace").rstrip())
    except (OSError, ValueError):
        pass


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    # The JVM leads its own process group (start_new_session), so a wrapper script's children
    # (or a JVM started by one) are stopped with it.
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        try:
            proc.send_signal(sig)
        except (ProcessLookupError, OSError):
            pass


def _close_bounded(stream, timeout: float = 2.0) -> None:
    # Closing a pipe waits for the lock of a writer blocked in write(); after the kill that
    # write fails at once, but the close still runs on a daemon thread so it can never hang us.
    if stream is None:
        return

    def close() -> None:
        try:
            stream.close()
        except (OSError, ValueError):
            pass

    t = threading.Thread(target=close, daemon=True)
    t.start()
    t.join(timeout)


def _kill(proc: subprocess.Popen, grace: float = 2.0) -> None:
    """Stop the JVM: SIGTERM, up to ``grace`` seconds, then SIGKILL; every wait is bounded.
    Used by weakref.finalize at interpreter exit too, so it must not need the owner object."""
    if proc.poll() is None and grace > 0:
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    # Also when the leader has exited: children of a wrapper script may still hold the pipes.
    _signal_group(proc, signal.SIGKILL)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # uninterruptible sleep in the kernel: nothing more to do
        pass
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        _close_bounded(stream)


class MeteorProcess:
    """A METEOR JVM started lazily; :meth:`exchange` sends lines and collects answers.

    ``timeout`` bounds the wait for any single answer line once the JVM has answered once;
    ``startup_timeout`` bounds the first answer, which includes loading the paraphrase table
    (about 20 s on an idle core).
    """

    def __init__(
        self,
        java: str,
        jar: Path,
        *,
        max_heap: str = "2G",
        timeout: float = 120.0,
        startup_timeout: float = 600.0,
    ) -> None:
        self.cmd = meteor_command(java, jar, max_heap)
        self.cwd = str(jar.parent)
        self.timeout = timeout
        self.startup_timeout = startup_timeout
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue | None = None
        self._stderr: collections.deque = collections.deque(maxlen=200)
        self._answered = False
        self._lock = threading.Lock()
        self._finalizer = None
        self._stderr_pump: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the JVM if it is not running (returns at once; loading goes on in the JVM)."""
        if self.alive():
            return
        self.close()
        try:
            proc = subprocess.Popen(
                self.cmd, cwd=self.cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True,
            )
        except OSError as e:
            raise ExternalToolError(f"could not start METEOR ({' '.join(self.cmd)}): {e}") from e
        self._proc = proc
        self._lines = queue.Queue()
        self._stderr = collections.deque(maxlen=200)
        self._answered = False
        threading.Thread(target=_pump_stdout, args=(proc.stdout, self._lines), daemon=True).start()
        self._stderr_pump = threading.Thread(target=_pump_stderr, args=(proc.stderr, self._stderr), daemon=True)
        self._stderr_pump.start()
        self._finalizer = weakref.finalize(self, _kill, proc)

    def stderr_tail(self, n: int = 20) -> str:
        lines = list(self._stderr)[-n:]
        return "\n".join(lines) if lines else "(no stderr output)"

    def exchange(self, lines: Sequence[str], n_answers: int | None = None) -> list[str]:
        """Write ``lines``, return the next ``n_answers`` (default ``len(lines)``) stripped lines."""
        n_answers = len(lines) if n_answers is None else n_answers
        with self._lock:
            self.start()
            proc, q = self._proc, self._lines
            payload = ("\n".join(lines) + "\n").encode("utf-8")
            write_error: list[BaseException] = []

            def write() -> None:
                try:
                    proc.stdin.write(payload)
                    proc.stdin.flush()
                except (OSError, ValueError) as e:  # broken pipe: the JVM died; reported below
                    write_error.append(e)

            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            out: list[str] = []
            for _ in range(n_answers):
                wait = self.timeout if self._answered else self.startup_timeout
                try:
                    raw = q.get(timeout=wait)
                except queue.Empty:
                    _kill(proc, grace=0)  # hung or stopped: nothing to wait for
                    self.close()
                    raise JVMTimeout(
                        f"METEOR gave no answer within {wait:g} s ({len(out)} of {n_answers} "
                        f"lines read); the JVM (pid {proc.pid}) was killed. stderr:\n{self.stderr_tail()}"
                    ) from None
                if raw is _EOF:
                    try:
                        rc = proc.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        rc = None
                    writer.join(timeout=1)
                    self._stderr_pump.join(timeout=2)  # stderr closes with the process: its last words
                    raise JVMCrashed(
                        f"METEOR JVM exited (code {rc}) after {len(out)} of {n_answers} answer "
                        f"lines. stderr:\n{self.stderr_tail()}"
                    )
                self._answered = True
                out.append(raw.decode("utf-8").strip())
            writer.join(timeout=self.timeout)
            if writer.is_alive():  # every answer came back but the write never finished
                _kill(proc, grace=0)
                self.close()
                raise JVMTimeout(f"writing to METEOR did not finish within {self.timeout:g} s; the JVM was killed")
            if write_error:  # answers all came back, so this cannot normally happen
                raise JVMCrashed(f"writing to METEOR failed: {write_error[0]}")
            return out

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # runs _kill once; a no-op on later calls
            self._finalizer = None
        self._proc = None


def default_workers() -> int:
    """2 JVMs on machines with at least 4 cores that are not saturated, else 1.

    One METEOR JVM already keeps more than one core busy while it loads the paraphrase table
    (JIT compiler and GC threads), and each extra JVM costs its own ~10 s of loading and JIT
    warm-up. On a 2-core machine a second JVM was a net loss even at load ~3.5: 44.8 s CPU /
    34.9 s wall against 25.7 s CPU / 20.1 s wall for one (benchmarks/results/meteor*.json).
    """
    cpus = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0] >= cpus / 2
    except (AttributeError, OSError):  # not available on every platform
        busy = False
    return 2 if cpus >= 4 and not busy else 1
