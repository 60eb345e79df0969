"""The METEOR process driver never waits without a bound: a "java" that never reads, or a
JVM stopped with SIGSTOP mid-run, ends in seconds with a named error and a dead process."""
from __future__ import annotations

import os
import signal
import stat
import sys
import threading
import time

import pytest

from capeval.errors import ExternalToolError
from capeval.metrics._meteor_jvm import JVMTimeout, MeteorProcess
from capeval.metrics.meteor import Meteor

pytestmark = pytest.mark.skipif(not hasattr(os, "killpg"), reason="POSIX process groups")

# Answers SCORE lines like the jar's protocol (one line per line) until stopped.
ECHO_JVM = r'''
import sys
for line in sys.stdin:
    print("1.0 1.0", flush=True)
'''


def _java(tmp_path, body: str):
    jar_dir = tmp_path / "jar"
    (jar_dir / "data").mkdir(parents=True)
    (jar_dir / "data" / "paraphrase-en.gz").write_bytes(b"")
    jar = jar_dir / "meteor-1.5.jar"
    jar.write_bytes(b"fake jar")
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\n" + body + "\n")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    return str(java), jar


def _bounded(fn, limit: float):
    """Run ``fn`` on a thread; fail (instead of hanging the suite) if it takes over ``limit`` s."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    start = time.monotonic()
    t.start()
    t.join(limit)
    assert not t.is_alive(), f"still waiting after {limit} s"
    return box, time.monotonic() - start


def _rows(n):
    # 5,000 distinct rows: ~400 KB, far beyond a pipe buffer, so the writer thread blocks.
    cands = [f"a man number {i} rides a horse on the beach" for i in range(n)]
    refs = [[f"a person {i} is riding a horse", "someone on a horse near the sea"] for i in range(n)]
    return cands, refs


def test_java_that_sleeps_ends_with_timeout_error(tmp_path, monkeypatch):
    java, jar = _java(tmp_path, "exec sleep 1000")  # never reads stdin, never answers
    monkeypatch.setenv("CAPEVAL_JAVA", java)
    cands, refs = _rows(5000)
    m = Meteor(backend="jar", jar=str(jar), workers=1, batch_size=5000, startup_timeout=1.0, timeout=1.0)
    box, took = _bounded(lambda: m.compute(cands, refs), 20)
    assert isinstance(box.get("error"), JVMTimeout), box
    assert "no answer within 1 s" in str(box["error"]) and "killed" in str(box["error"])
    assert took < 15
    assert all(p._proc is None for p in m._procs)


def test_sigstopped_jvm_is_killed_with_a_named_error(tmp_path):
    java, jar = _java(tmp_path, f"exec {sys.executable} -c '{ECHO_JVM}'")
    proc = MeteorProcess(java, jar, timeout=1.0, startup_timeout=10.0)
    try:
        assert proc.exchange(["SCORE ||| r ||| h"] * 3) == ["1.0 1.0"] * 3  # healthy first
        pid = proc.pid
        os.kill(pid, signal.SIGSTOP)
        lines = [f"SCORE ||| reference number {i} ||| hypothesis {i}" for i in range(20000)]
        box, took = _bounded(lambda: proc.exchange(lines), 20)
        assert isinstance(box.get("error"), JVMTimeout), box
        assert took < 15
        # the stopped process is gone (SIGKILL ends a stopped process; SIGTERM alone would not)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        proc.close()


def test_other_workers_stop_after_one_fails(tmp_path, monkeypatch):
    java, jar = _java(tmp_path, "exec sleep 1000")
    m = Meteor(backend="jar", java=java, jar=str(jar), workers=2, batch_size=100, startup_timeout=1.0, timeout=1.0)
    monkeypatch.setattr("capeval.metrics.meteor.MIN_UNITS_PER_EXTRA_WORKER", 1)
    cands, refs = _rows(2000)  # 20 batches: without the stop flag, ~10 s per worker
    box, took = _bounded(lambda: m.compute(cands, refs), 20)
    assert isinstance(box.get("error"), ExternalToolError), box
    assert took < 6
    m.close()


def test_native_backend_names_a_jar_that_is_not_a_zip(tmp_path, monkeypatch):
    from capeval.errors import ResourceNotFound

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    _, jar = _java(tmp_path, "exit 1")
    with pytest.raises(ResourceNotFound, match="not a readable METEOR 1.5 jar"):
        Meteor(backend="native", jar=str(jar)).compute(*_rows(2))
