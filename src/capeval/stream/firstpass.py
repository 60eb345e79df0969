"""The first pass of a streamed run: the corpus pre-passes of the whole input.

CIDEr's df keeps its own hashed path (:mod:`capeval.stream.dfstore`: 128-bit n-gram keys,
memory-mapped, bounded at 1M rows). Every other family whose instance has a corpus pre-pass
(``Metric.prepass``: BERTScore with idf) gets its state of the whole input in the same pass:
each chunk's state merged with ``+`` in input order, saved in the run folder
(:class:`~capeval.stream.store.RunStore`), resumed from its checkpoint after a kill, and handed
to every chunk's instance through ``Metric.prepass_options``.
"""
from __future__ import annotations

import time
from typing import Any

from ..errors import InputError
from .chunks import DfHandle, Settings, df_pass
from .prepared import Prepared
from .readers import Chunk
from .store import RunStore


def _resume_point(store: RunStore, settings: Settings, sid, count_df: bool):
    """``(df accumulator or None, states, chunks done, rows done)`` of a killed first pass, from
    its checkpoint; a fresh start when there is none, or when its df and pre-pass parts (saved
    one after the other) are of different chunk counts."""
    from .dfstore import DfAccumulator

    ck_df = store.load_df_checkpoint(sid) if count_df else None
    ck_states = store.load_prepass_checkpoint(sid) if settings.prepassed else None
    whole = (ck_df is not None) == count_df and (ck_states is not None) == bool(settings.prepassed)
    if whole and len({ck[1] for ck in (ck_df, ck_states) if ck is not None}) == 1:
        if ck_states is not None:
            return (ck_df[0] if ck_df is not None else None), *ck_states
        assert ck_df is not None
        return ck_df[0], {}, ck_df[1], ck_df[0].n_units
    return (DfAccumulator() if count_df else None), {}, 0, 0


def _df_pass(eng, store: RunStore, settings: Settings, read_chunks, sid, prepared: Prepared | None,
             progress, checkpoint_seconds: float, count_df: bool = True):
    """The first pass: CIDEr's df of the whole input, summed over the chunks (``count_df``),
    and the pre-pass state of every family of ``settings.prepassed``, merged with ``+`` in
    input order, resuming a killed pass from its last checkpoint (same input file), if any.
    ``(df written to the run folder, memory-mapped, or None; states; rows)``."""
    from collections import deque

    acc, states, skip, done = _resume_point(store, settings, sid, count_df)
    n_chunks, last_ck = skip, time.monotonic()
    in_flight: deque[Chunk] = deque()

    def todo():
        for c in read_chunks():
            if c.index >= skip:
                if prepared is not None:
                    in_flight.append(c)
                yield c, settings, prepared is not None, count_df

    for part in eng.map(df_pass, todo()):
        if prepared is not None:
            c = in_flight.popleft()
            c.tokens = part.tokens
            prepared.save(c)
        if acc is not None:
            acc.add(part.keys, part.counts, part.n)
        for fam, state in part.states.items():
            if state is None:
                raise InputError(f"metric {fam!r} returned no pre-pass state for input rows {done}-"
                                 f"{done + part.n - 1}, though it has one for other rows")
            states[fam] = states[fam] + state if fam in states else state
        done += part.n
        n_chunks += 1
        if progress is not None:
            progress("df", done)
        if time.monotonic() - last_ck > checkpoint_seconds:
            if settings.prepassed:
                store.save_prepass_checkpoint(states, n_chunks, done, sid)
            if acc is not None:
                store.save_df_checkpoint(acc, n_chunks, sid)
            last_ck = time.monotonic()
    return (acc.result(store.folder) if acc is not None else None), states, done


def df_handle(eng, store: RunStore, settings: Settings, source: Any, df_file, needs_df: bool, chunk_size: int,
              progress, checkpoint_seconds: float):
    """The corpus pre-passes, shipped to the engine: ``(df handle, id of the pre-pass states,
    other families' states, chunks to score)``. CIDEr's df of a file, or counted over the whole
    input, and the states of ``settings.prepassed`` (resuming saved ones); none for one chunk,
    which every family scores as the whole input."""
    handle, df_id, read = None, "none", source.read
    if df_file is not None:
        handle, df_id = _df_file_handle(eng, df_file)
    count_df = needs_df and df_file is None
    if not (count_df or settings.prepassed) or source.single:
        return handle, df_id, None, read
    sid = source.identity()
    stored = False
    # Local engines keep the chunks the df pass validated and tokenized in the run folder, for
    # the score pass (Ray workers may run where the folder is not).
    prepared = Prepared(store, sid) if eng.name == "local" else None
    dfo = store.load_df(sid) if count_df else None
    saved = store.load_prepass(sid) if settings.prepassed else None
    if (count_df and dfo is None) or (settings.prepassed and saved is None):
        # A saved df is kept (workers may have it memory-mapped); only what is missing is counted.
        counted, states, n_rows = _df_pass(eng, store, settings, source.read, sid, prepared, progress,
                                           checkpoint_seconds, count_df and dfo is None)
        if counted is not None:
            store.save_df(counted, sid)
            dfo = counted
        if settings.prepassed:
            stored = store.save_prepass(states, n_rows, sid)
        store.drop_df_checkpoint()
    elif saved is not None:
        states, n_rows = saved
        stored = True
    else:
        assert dfo is not None  # only the df, reused
        states, n_rows = {}, dfo.n_units
    if dfo is not None:
        handle, df_id = eng.ship_df(dfo, store.folder), dfo.digest()
    if states:
        df_id += "|" + store.prepass_digest(states)
    if prepared is not None:
        n_chunks = -(-n_rows // chunk_size)
        read = lambda: prepared.read(n_chunks, source.read)  # noqa: E731
    return handle, df_id, (eng.ship_states(states, store if stored else None, sid) if states else None), read


def _df_file_handle(eng, df_file) -> tuple[DfHandle, str]:
    """CIDEr's df from a file (or a df object), shipped to the engine, and its id."""
    from ..metrics.cider import DocumentFrequency

    dfo = df_file if isinstance(df_file, DocumentFrequency) else DocumentFrequency.load(df_file)
    if eng.name == "ray":
        handle = eng.ship_df(dfo, None)  # into the object store once
    elif eng.jobs > 1 and not isinstance(df_file, DocumentFrequency):
        handle = DfHandle("file", str(df_file), dfo.n_units)  # each worker loads it once
    else:
        handle = DfHandle("object", dfo, dfo.n_units)
    return handle, dfo.source
