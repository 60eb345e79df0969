"""Where chunk functions run: in this process, in ``jobs`` local processes, or as Ray tasks.

Every engine maps a chunk function over a lazy sequence of argument tuples and yields results
in submission order, with at most ``window`` chunks in flight, so memory stays bounded however
long the input and however slow one chunk is. The functions are the same for all engines
(:mod:`capeval.stream.chunks`), so the numbers cannot depend on the engine.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from ..errors import InputError, ResourceNotFound
from .chunks import DfHandle, df_pass, score_pass

ENGINES = ("local", "ray")


def _score_task(chunk, settings, df_kind, df_ref, n_units, states=None):
    """Score pass with the df handle rebuilt on the worker. Ray resolves ``df_ref`` (an
    object-store reference to the df arrays) and ``states`` (to the pre-pass states) only when
    they are top-level arguments."""
    handle = None if df_kind is None else DfHandle(df_kind, df_ref, n_units)
    return score_pass(chunk, settings, handle, states)


class SerialEngine:
    name = "local"
    jobs = 1

    def map(self, fn: Callable, args: Iterable[tuple], window: int = 1) -> Iterator:
        for a in args:
            yield fn(*a)

    def ship_df(self, dfo, folder) -> DfHandle:
        return DfHandle("object", dfo, dfo.n_units)

    def ship_states(self, states: dict, store=None, source_id: str | None = None):
        """The pre-pass states of families other than CIDEr's, as the score pass receives them."""
        return states

    def close(self) -> None:
        pass


class ProcessEngine:
    """``jobs`` worker processes (forkserver where available: no inherited threads or locks)."""

    name = "local"

    def __init__(self, jobs: int):
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        self.jobs = jobs
        methods = mp.get_all_start_methods()
        ctx = mp.get_context("forkserver" if "forkserver" in methods else "spawn")
        import os

        from .orphans import watch_parent

        # Workers exit when this process dies, even by SIGKILL (orphans.py).
        self._pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=watch_parent,
                                         initargs=(os.getpid(),))

    def map(self, fn: Callable, args: Iterable[tuple], window: int | None = None) -> Iterator:
        window = window or 2 * self.jobs
        pending: deque = deque()
        it = iter(args)
        try:
            for a in it:
                pending.append(self._pool.submit(fn, *a))
                if len(pending) >= window:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for f in pending:
                f.cancel()

    def ship_df(self, dfo, folder) -> DfHandle:
        # Workers memory-map the saved arrays (named by their digest, never rewritten): one copy
        # in the page cache for all of them.
        if getattr(dfo, "files", None) is None:
            return DfHandle("object", dfo, dfo.n_units)
        return DfHandle("hashed", dfo.files, dfo.n_units)

    def ship_states(self, states: dict, store=None, source_id: str | None = None):
        # Each worker reads the saved states once (a learned model's df grows with the input);
        # by value with each chunk only when nothing was saved (an input read once).
        if store is None or source_id is None:
            return states
        from .chunks import StatesHandle

        from .store import allowed_names

        path, key = store.prepass_path(source_id)
        return StatesHandle(path, key, store.prepass_digest(states), store.secret, allowed_names("prepass"))

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class RayEngine:
    """Chunk functions as Ray tasks on a running cluster (``address``) or a local Ray started
    here with ``jobs`` CPUs. The df arrays go to the object store once (``ray.put``) and every
    task reads them from there (zero-copy on the same node)."""

    name = "ray"

    def __init__(self, jobs: int, address: str | None = None):
        try:
            import ray
        except ImportError:
            from ..extras import install_hint

            raise ResourceNotFound(f"--engine ray needs Ray, the ray extra: {install_hint(['ray'])} "
                                   "(or pip install ray)") from None
        self.ray = ray
        self._owns = False
        if not ray.is_initialized():
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(num_cpus=max(1, jobs), include_dashboard=False, log_to_driver=False)
            self._owns = True
        elif address:
            pass  # already connected (e.g. by the caller): use that cluster
        self.jobs = max(1, int(ray.available_resources().get("CPU", jobs) or jobs))
        self._remote: dict[Callable, object] = {}

    def _task(self, fn: Callable):
        if fn not in self._remote:
            self._remote[fn] = self.ray.remote(fn)
        return self._remote[fn]

    def map(self, fn: Callable, args: Iterable[tuple], window: int | None = None) -> Iterator:
        if fn is score_pass:
            fn = _score_task
            args = (self._unpack(*a) for a in args)
        window = window or 2 * self.jobs
        task = self._task(fn)
        pending: deque = deque()
        for a in args:
            pending.append(task.remote(*a))
            if len(pending) >= window:
                yield self.ray.get(pending.popleft())
        while pending:
            yield self.ray.get(pending.popleft())

    @staticmethod
    def _unpack(chunk, settings, handle: DfHandle | None, states=None):
        if handle is None:
            return chunk, settings, None, None, 0, states
        return chunk, settings, handle.kind, handle.ref, handle.n_units, states

    def ship_df(self, dfo, folder) -> DfHandle:
        from .dfstore import HashedDocumentFrequency

        if isinstance(dfo, HashedDocumentFrequency):
            ref = self.ray.put((np.asarray(dfo.keys), np.asarray(dfo.counts)))
            return DfHandle("arrays", ref, dfo.n_units)
        return DfHandle("object", self.ray.put(dfo), dfo.n_units)  # a loaded df file

    def ship_states(self, states: dict, store=None, source_id: str | None = None):
        return self.ray.put(states)  # into the object store once; each task gets it resolved

    def close(self) -> None:
        if self._owns:
            self.ray.shutdown()


def make_engine(engine: str = "local", jobs: int = 1, address: str | None = None):
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}; choose from {list(ENGINES)}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InputError(f"jobs must be a positive integer, got {jobs!r}")
    if address is not None and engine != "ray":
        raise InputError("--address is for --engine ray")
    if engine == "ray":
        return RayEngine(jobs, address)
    return SerialEngine() if jobs == 1 else ProcessEngine(jobs)


__all__ = ["ENGINES", "make_engine", "df_pass", "score_pass"]
