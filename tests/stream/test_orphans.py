"""Fault injection (issue 28, item 20): a ``--jobs`` run killed with SIGKILL leaves no process
behind. Its workers (children of the forkserver, not of the run) watch the run's process and
exit when it is gone; the forkserver and the resource tracker then end with them."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc")

SCRIPT = textwrap.dedent("""
    import sys, time
    from capeval.stream.engines import ProcessEngine
    eng = ProcessEngine(2)
    futures = [eng._pool.submit(time.sleep, 120) for _ in range(2)]  # busy workers, as mid-run
    while len(eng._pool._processes) < 2:
        time.sleep(0.05)
    print("ready", flush=True)
    time.sleep(120)
""")


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out.setdefault(int(fields[1]), []).append(int(d.name))
    return out


def _descendants(pid: int) -> set[int]:
    tree, found, todo = _children(), set(), [pid]
    while todo:
        for c in tree.get(todo.pop(), []):
            if c not in found:
                found.add(c)
                todo.append(c)
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited; only its parent's wait is missing


def test_workers_forkserver_and_tracker_exit_when_the_run_is_killed():
    _killed_run_leaves_nothing(SCRIPT)


def _killed_run_leaves_nothing(script: str, *args: str) -> None:
    proc = subprocess.Popen([sys.executable, "-c", script, *args], cwd=Path(__file__).parents[2], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        left = _descendants(proc.pid)
        assert len(left) >= 3  # forkserver (or spawn) workers, forkserver, resource tracker
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_running(p) for p in left):
            time.sleep(0.1)
        alive = [p for p in left if _running(p)]
        assert not alive, {p: Path(f"/proc/{p}/cmdline").read_bytes()[:80] for p in alive}
    finally:
        for p in _descendants(proc.pid) if proc.poll() is None else ():
            os.kill(p, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()


def _plugin_exits(status: int) -> None:
    from capeval import _process

    _process.running("'osexit' (test)")
    os._exit(status)


def test_a_workers_os_exit_while_a_plugin_runs_is_an_error_not_a_dead_worker():
    from capeval.stream.engines import ProcessEngine

    eng = ProcessEngine(1)
    try:
        with pytest.raises(SystemExit, match=r"os\._exit\(3\)"):
            eng._pool.submit(_plugin_exits, 3).result(timeout=60)
        assert eng._pool.submit(os.getpid).result(timeout=60) > 0  # the worker lives on
    finally:
        eng._pool.shutdown(cancel_futures=True)


BUSY_IN_PLUGIN = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from capeval.stream.engines import ProcessEngine
    from tests.stream.test_orphans import busy
    eng = ProcessEngine(2)
    started = [Path(sys.argv[1]) / str(i) for i in range(2)]
    futures = [eng._pool.submit(busy, p) for p in started]
    while not all(p.exists() for p in started):  # both workers inside the plug-in
        time.sleep(0.05)
    print("ready", flush=True)
    time.sleep(120)
""")


def busy(started: Path) -> None:
    """A worker inside a third-party metric when the run dies: the watcher's exit is not the
    guarded ``os._exit`` (which would raise in the watcher's thread and leave the worker)."""
    from capeval import _process

    _process.running("'slow' (test)")
    started.touch()
    time.sleep(120)


def test_workers_busy_in_a_plugin_exit_when_the_run_is_killed(tmp_path):
    _killed_run_leaves_nothing(BUSY_IN_PLUGIN, str(tmp_path))
