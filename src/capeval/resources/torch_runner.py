"""The one place capeval runs torch forward passes when it scores: sentence embeddings
(``sentsim``, learned's embedding features), BERTScore (and QACE's BERTScore of answers), CLIP's
text and image towers, QACE's neural readers and pre-gen adapters.

A value must depend on its own input only: not on torch's thread count, on other Python
threads scoring at once, on the other inputs of the call, or on what ran earlier in the
process. Two things besides the input decide how a float32 forward pass rounds:

* **The intra-op thread count.** MKL and oneDNN split a matrix product differently over two
  threads than over one (learned's score moved by 7e-7 between ``torch.set_num_threads(1)``
  and 2). Every forward pass here runs on one of capeval's torch threads, each fixed at one
  intra-op thread for its life, whatever the calling thread's count; the calling thread's
  count only says how many of those threads one call may use at once
  (:func:`default_workers`).
* **The shape of the call.** MKL picks its matrix-product kernel by size: on our machines a
  linear layer over fewer than 16 rows rounds differently from the same rows inside a larger
  product, so a sentence encoded alone and in a batch of 2 differ in every element, and a
  batch's size depended on how many other texts of that length the corpus had. Here every
  input goes through the model in a batch of a fixed shape that depends on the input alone:
  :data:`ROWS` rows of the input's own length (token count; every image has the same), no
  padding. A length with fewer inputs than that is filled with copies of one of them, whose
  outputs are dropped. Rows of one product never mix, so a row's value depends on the shape
  and its own content, not on its neighbours or its place.

Cost (docs/PERFORMANCE.md, Torch runner): against the earlier batches of up to 64 sentences
of one length, fixed 8-row batches encode about 1.4x slower on one core; encoding each
input alone (the other shape-free choice) was 4.3x slower.

torch is imported on first use only, so importing this module is cheap.
"""
from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

#: Rows of every forward pass (inputs of one length, filled with copies when fewer). Part of
#: what a value depends on: changing it moves float32 results in the last bits.
ROWS = 8

_local = threading.local()  # .runner: True on capeval's torch threads


def on_runner_thread() -> bool:
    """True inside a task the runner is running (nested calls then run inline)."""
    return bool(getattr(_local, "runner", False))


class _Pool:
    """Daemon threads fixed at one intra-op torch thread each, started all at once so torch's
    process-wide default (which ``torch.set_num_threads`` also writes, and which threads
    that have not used torch yet start from) is restored right after."""

    def __init__(self, size: int) -> None:
        import torch

        self.pid = os.getpid()
        self.size = size
        self.tasks: queue.SimpleQueue = queue.SimpleQueue()
        keep = torch.get_num_threads()
        ready = threading.Barrier(size + 1)
        self.threads = [
            threading.Thread(target=self._serve, args=(ready,), name=f"capeval-torch-{k}", daemon=True)
            for k in range(size)
        ]
        for t in self.threads:
            t.start()
        ready.wait()
        torch.set_num_threads(keep)  # the calling thread's count, and torch's default, as they were

    def _serve(self, ready: threading.Barrier) -> None:
        import torch

        # torch sets a thread's count from its process-wide default the first time the thread
        # asks for it or runs a parallel operation; that happens here first, so the default
        # restored by __init__ cannot undo the count set next.
        torch.get_num_threads()
        torch.set_num_threads(1)  # this thread's OpenMP and MKL count, for its whole life
        _local.runner = True
        ready.wait()
        while True:
            fn, future = self.tasks.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                future.set_exception(exc)

    def submit(self, fn: Callable[[], Any]) -> Future:
        future: Future = Future()
        self.tasks.put((fn, future))
        return future


_pool: _Pool | None = None
_pool_lock = threading.Lock()


def capacity() -> int:
    """How many torch threads the process keeps: one per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def _forget_pool_after_fork() -> None:
    # A forked child has the parent's pool object but none of its threads, and the lock may
    # have been held by a parent thread at the fork.
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def _get_pool() -> _Pool:
    global _pool
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid():
            from .encoders import fork_safe_torch

            fork_safe_torch()
            _pool = _Pool(capacity())
        return _pool


def default_workers(device: str = "cpu") -> int:
    """Threads one call uses at once: the calling thread's torch thread count on CPU (the
    budget a user sets with ``torch.set_num_threads``), at most :func:`capacity`; one on
    other devices. Only speed depends on it."""
    import torch

    if torch.device(device).type != "cpu":
        return 1
    return max(1, min(torch.get_num_threads(), capacity()))


def run(work: Callable[[T], Any], tasks: Sequence[T], *, workers: int | None = None,
        sizes: Sequence[int] | None = None, progress: bool = False) -> list[Any]:
    """``work(task)`` for every task on capeval's torch threads, under ``torch.inference_mode``;
    the results in task order.

    ``workers``: how many tasks run at once (default :func:`default_workers`). With
    ``progress``, :func:`capeval.progress.report` counts ``sizes`` (default one per task) from
    the calling thread, in task order. The first error of a task is raised here, after the
    running tasks end; tasks not started yet are dropped. Called from inside a task, the tasks
    run inline, in order, on that (already single-threaded) thread.
    """
    import torch

    from ..progress import report

    tasks = list(tasks)
    sizes = [1] * len(tasks) if sizes is None else list(sizes)
    total = sum(sizes)
    tell = report if progress else (lambda done, total: None)
    results: list[Any] = [None] * len(tasks)
    tell(0, total)
    if on_runner_thread():
        done = 0
        with torch.inference_mode():
            for k, task in enumerate(tasks):
                results[k] = work(task)
                done += sizes[k]
                tell(done, total)
        return results
    if not tasks:
        return results
    pool = _get_pool()
    lanes = max(1, min(default_workers() if workers is None else workers, pool.size, len(tasks)))
    finished: queue.SimpleQueue = queue.SimpleQueue()
    claim = iter(range(len(tasks)))
    claim_lock = threading.Lock()
    failed: list[BaseException] = []

    def lane() -> None:
        with torch.inference_mode():  # grad mode is per thread
            while not failed:
                with claim_lock:
                    k = next(claim, None)
                if k is None:
                    return
                try:
                    results[k] = work(tasks[k])
                except BaseException as exc:  # noqa: BLE001 - raised in the caller
                    failed.append(exc)
                    finished.put(None)
                    return
                finished.put(k)

    futures = [pool.submit(lane) for _ in range(lanes)]
    ready = [False] * len(tasks)
    nxt = done = 0
    try:
        for _ in range(len(tasks)):
            k = finished.get()
            if k is None:
                break
            ready[k] = True
            while nxt < len(tasks) and ready[nxt]:
                done += sizes[nxt]
                nxt += 1
                tell(done, total)
    except BaseException as exc:  # e.g. a progress callback that cancels: stop the lanes too
        failed.append(exc)
        raise
    finally:
        for f in futures:
            f.result()  # lanes end soon once one failed
    if failed:
        raise failed[0]
    return results


def fixed_batches(keys: Sequence[Hashable], rows: int | Callable[[Any], int] = ROWS) -> list[list[int]]:
    """Indices in batches of exactly ``rows`` indices of one key (a token length), each key's
    last batch filled by repeating its first index; keys in first-seen order. ``rows`` may be
    a function of the key (a memory bound that depends on the length).

    Which inputs share a batch depends on the corpus, but every batch of a key has the same
    shape, so an input's value does not (module docstring)."""
    groups: dict[Hashable, list[int]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    out = []
    for key, members in groups.items():
        size = rows(key) if callable(rows) else rows
        if size < 1:
            raise ValueError(f"rows must be at least 1, got {size}")
        for s in range(0, len(members), size):
            batch = members[s:s + size]
            out.append(batch + [batch[0]] * (size - len(batch)))
    return out


def map_fixed(forward: Callable[[list[int]], Any], keys: Sequence[Hashable], *,
              rows: int | Callable[[Any], int] = ROWS, per_task: int = ROWS, workers: int | None = None,
              progress: bool = False) -> list[Any]:
    """``out[i]`` for every input i: ``forward(batch)`` runs one batch of :func:`fixed_batches`
    (``rows`` indices, all of one key) and returns one output per index of the batch; the
    outputs of filler copies are dropped. A thread takes about ``per_task`` inputs at a time
    (whole batches; scheduling only)."""
    batches = fixed_batches(keys, rows)
    step = max(1, -(-per_task // ROWS))
    tasks = [batches[s:s + step] for s in range(0, len(batches), step)]
    outs: list[list[Any]] = run(lambda task: [forward(b) for b in task], tasks, workers=workers,
               sizes=[sum(len(set(b)) for b in t) for t in tasks], progress=progress)
    result: list[Any] = [None] * len(keys)
    for batch, got in zip(batches, (g for task_out in outs for g in task_out)):
        if len(got) != len(batch):
            raise RuntimeError(f"a forward pass returned {len(got)} outputs for {len(batch)} inputs")
        for i, value in zip(reversed(batch), reversed(list(got))):
            result[i] = value  # in reverse, so the real row (the first of an index) is kept
    return result
