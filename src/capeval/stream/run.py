"""``score_stream``: score an input of any length in bounded memory, resumably, on any engine.

1. df pass (only for CIDEr with df from the scored set, and only when the input is longer than
   one chunk): every chunk is validated and its reference n-grams counted; the counts are summed
   into a hashed df table (:mod:`capeval.stream.dfstore`) saved in the run folder.
2. score pass: every chunk is scored by :func:`capeval.score` with that df, on the engine; each
   chunk result is saved in the run folder as it arrives (:mod:`capeval.stream.store`). With the
   local engines the chunks come from the run folder as the df pass validated and tokenized
   them (:class:`~capeval.stream.prepared.Prepared`), so the input is read, parsed and tokenized once.
3. assembly: chunk results are read back in input order into the output file (written under a
   temporary name and renamed), and the corpus scores come from each family's merged statistics
   (``capeval.metrics.statistics``): integer totals (BLEU's counts, METEOR's summed statistics,
   TER's edits) and the per-row columns a corpus rule sums in order (a mean, taken with numpy
   over the whole column as the in-memory path takes it; TER's reference lengths): 8 bytes per
   row and column.

Every number equals :func:`capeval.score` on the same rows (tests compare with ``==``).
"""
from __future__ import annotations

import itertools
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..errors import InputError
from ..metrics.registry import METRIC_SETS
from ..metrics.statistics import Statistics
from ..result import Result
from ..signature import with_fields
from .chunks import DEFAULT_CHUNK, DfHandle, Settings, df_pass, pickle_user_classes, score_pass
from .ids import IdTracker, duplicate_error
from .prepared import Prepared, source_id
from .readers import Chunk, chunks, open_rows
from .store import RunStore
from ..rowfiles import RowFileWriter, row_format



def streamable(metrics: Iterable[str], options: dict[str, dict] | None = None) -> bool:
    """Whether every metric can be streamed with ``options`` (its family's
    ``Metric.cannot_stream``)."""
    from ..metrics.registry import family_for

    options = options or {}
    try:
        return all(family_for(m).cannot_stream(options.get(family_for(m).family) or {}) is None for m in metrics)
    except Exception:
        return False


def _settings(metrics, tokenizer, allow_empty, line_breaks, options, output_format):
    from ..api import check_option_names, group_by_family
    from ..metrics.registry import get_family
    from ..text import tokenizer_id
    from ..validation import check_line_break_policy

    metrics = list(metrics)
    if not metrics:
        raise InputError("no metrics requested")
    groups = group_by_family(metrics)
    reasons = {cls.family: cls.cannot_stream(dict((options or {}).get(cls.family) or {})) for cls in groups}
    bad = [m for cls, names in groups.items() if reasons[cls.family] is not None for m in names]
    if bad:
        why = "; ".join(r for r in dict.fromkeys(reasons.values()) if r is not None)
        raise InputError(f"metric(s) {', '.join(bad)} cannot be streamed: {why}. Score them with capeval.score "
                         "(CLI: without --jobs/--engine/--chunk-size)")
    tokenizer_id(tokenizer)
    check_line_break_policy(line_breaks)
    options = {fam: dict(opt or {}) for fam, opt in (options or {}).items()}
    df_source = None
    for fam, opt in options.items():
        check_option_names(get_family(fam), opt)  # requested or not: a misspelt option is an error
        if not isinstance(opt, dict):
            raise InputError(f"options for {fam} must be a mapping of option names to values, got {opt!r}")
        if get_family(fam).uses_df:
            if opt.get("save_df") is not None:
                raise InputError(f"{fam}: save_df (CLI --save-cider-df) is not available when streaming; "
                                 "save the df with capeval.score on the references, or score without streaming")
            src = opt.pop("df", None)
            if src is not None and str(src) != "corpus":
                if df_source is not None and src is not df_source and str(src) != str(df_source):
                    raise InputError("cider and cider_d were given different df files; stream them separately")
                df_source = src
    frozen = tuple(sorted((f, tuple(sorted(o.items()))) for f, o in options.items()))
    user_ids, user_classes = pickle_user_classes(groups)
    settings = Settings(tuple(metrics), tokenizer, bool(allow_empty), line_breaks, frozen, output_format,
                        user_ids, user_classes)
    needs_df = any(cls.uses_df for cls in groups)
    return settings, needs_df, df_source


def _merged(family: str, parts: list[Statistics]) -> Statistics:
    """One family's statistics of the whole input from its chunks'. Parts that disagree (a
    signature field that depends on the chunk) are a bug in that family's contract."""
    try:
        return Statistics.merge(parts)
    except ValueError as e:
        raise RuntimeError(f"{family}: the chunks' statistics do not merge ({e})") from None


def _df_pass(eng, store: RunStore, settings: Settings, read_chunks, sid, prepared: Prepared | None,
             progress, checkpoint_seconds: float):
    """The df of the whole input, summed over the chunks (resuming a killed df pass from its
    last checkpoint, same input file, if any); written to the run folder, memory-mapped."""
    from collections import deque

    from .dfstore import DfAccumulator

    ck = store.load_df_checkpoint(sid)
    acc, skip = ck if ck is not None else (DfAccumulator(), 0)
    done, n_chunks, last_ck = acc.n_units, skip, time.monotonic()
    in_flight: deque[Chunk] = deque()

    def todo():
        for c in read_chunks():
            if c.index >= skip:
                if prepared is not None:
                    in_flight.append(c)
                yield c, settings, prepared is not None

    for keys, counts, n, tokens in eng.map(df_pass, todo()):
        if prepared is not None:
            c = in_flight.popleft()
            c.tokens = tokens
            prepared.save(c)
        acc.add(keys, counts, n)
        done += n
        n_chunks += 1
        if progress is not None:
            progress("df", done)
        if time.monotonic() - last_ck > checkpoint_seconds:
            store.save_df_checkpoint(acc, n_chunks, sid)
            last_ck = time.monotonic()
    return acc.result(store.folder)


def score_stream(
    rows,
    metrics: Iterable[str] = METRIC_SETS["ngram"],
    *,
    output: str | Path | None = None,
    tokenizer: str = "ptb",
    allow_empty: bool = False,
    line_breaks: str = "space",
    options: dict[str, dict[str, Any]] | None = None,
    chunk_size: int = DEFAULT_CHUNK,
    jobs: int = 1,
    engine: str = "local",
    address: str | None = None,
    run_dir: str | Path | None = None,
    keep_per_caption: bool | None = None,
    progress: Callable[[str, int], None] | None = None,
    checkpoint_seconds: float = 60.0,
) -> Result:
    """Score rows in chunks of ``chunk_size``; same numbers as :func:`capeval.score`.

    Parameters
    ----------
    rows : path or iterable
        A ``.jsonl``/``.csv``/``.tsv``/``.parquet`` file (read in chunks), or an iterable of
        ``(candidate, references)``, ``(id, candidate, references)`` or mappings with
        ``candidate``, ``references`` and optionally ``id``. A one-shot iterator is spilled to
        the run folder when it must be read twice (CIDEr's df pass).
    metrics : names of the BLEU, ROUGE-L, CIDEr-D and CIDEr outputs (others do not stream).
    output : path, optional
        ``.jsonl`` (one object per row), ``.csv`` or ``.parquet`` per-row scores, written in
        input order, plus ``<name>.signatures.json`` with corpus scores and signatures.
    chunk_size, jobs, engine, address
        Rows per chunk; ``jobs`` worker processes (``engine="local"``) or Ray tasks
        (``engine="ray"``, on the cluster at ``address`` or a local Ray with ``jobs`` CPUs).
    run_dir : path, optional
        Folder for chunk results and the df (default ``<output>.capeval-run``, or a temporary
        folder without output). A run killed midway resumes there from its complete chunks.
        Removed after a successful run.
    keep_per_caption : bool, optional
        Return per-caption arrays in the Result (default: only when there is no output file).
    progress : callable, optional
        ``progress(stage, rows_done)`` with stage ``"df"`` or ``"score"`` after every chunk.
    checkpoint_seconds : float
        How often the df pass saves its counts so far (a killed df pass resumes from there).
    tokenizer, allow_empty, line_breaks, options : as :func:`capeval.score`.
    """
    from ..metrics.registry import family_for
    from ..text import tokenizer_id
    from ..validation import LINE_BREAK_TAG
    from .engines import make_engine

    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise InputError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    out_path = Path(output) if output is not None else None
    fmt = None
    if out_path is not None:
        fmt = row_format(out_path)
        if fmt is None:
            raise InputError(f"{out_path}: streamed output is .jsonl, .csv or .parquet (one row per caption)")
        from ..outputs import same_file

        if isinstance(rows, (str, Path)) and same_file(rows, out_path):
            raise InputError(f"{out_path}: the output would overwrite the input")
    metrics = list(metrics)
    settings, needs_df, df_file = _settings(metrics, tokenizer, allow_empty, line_breaks, options, fmt)
    if keep_per_caption is None:
        keep_per_caption = out_path is None

    # Re-iterable sources are read twice; a one-shot iterator is spilled to the run folder.
    is_path = isinstance(rows, (str, Path))
    one_shot = not is_path and iter(rows) is rows
    if run_dir is None:
        temporary = out_path is None
        folder = Path(tempfile.mkdtemp(prefix="capeval-run-")) if temporary else \
            out_path.with_name(out_path.name + ".capeval-run")
    else:
        temporary, folder = False, Path(run_dir)
    df_label = "file:" + str(df_file) if df_file is not None else ("corpus" if needs_df else "none")
    if df_file is not None and not isinstance(df_file, (str, Path)):
        df_label = f"object:{df_file.source}"
    fingerprint = {"version": __version__, "settings": repr(settings), "chunk_size": chunk_size, "df": df_label}
    store = RunStore(folder, fingerprint, temporary=temporary)
    eng = make_engine(engine, jobs, address)
    try:
        # Peek: an input of one chunk is scored as one corpus (no df pass needed).
        first = chunks(open_rows(rows), chunk_size)
        head = list(itertools.islice(first, 2))
        spilled: list[int] = []

        def read_chunks():
            if not one_shot:
                return chunks(open_rows(rows), chunk_size)
            return (store.load(i, "input", kind="input") for i in spilled)

        if one_shot:  # keep the rows for the second read
            for c in itertools.chain(head, first):
                store.save(c.index, "input", c, kind="input")
                spilled.append(c.index)
        else:
            first.close()  # a file reader: reopened for each pass
        if not head:
            raise InputError(f"{rows}: no records" if is_path else "no rows to score")
        single = len(head) == 1

        handle: DfHandle | None = None
        df_id = "none"
        score_chunks = read_chunks
        if df_file is not None:
            from ..metrics.cider import DocumentFrequency

            dfo = df_file if isinstance(df_file, DocumentFrequency) else DocumentFrequency.load(df_file)
            if eng.name == "ray":
                handle = eng.ship_df(dfo, None)  # into the object store once
            elif eng.jobs > 1 and not isinstance(df_file, DocumentFrequency):
                handle = DfHandle("file", str(df_file), dfo.n_units)  # each worker loads it once
            else:
                handle = DfHandle("object", dfo, dfo.n_units)
            df_id = dfo.source
        elif needs_df and not single:
            sid = source_id(rows)
            # Local engines keep the chunks the df pass validated and tokenized in the run
            # folder, for the score pass (Ray workers may run where the folder is not).
            prepared = Prepared(store, sid) if eng.name == "local" else None
            dfo = store.load_df(sid)
            if dfo is None:
                dfo = _df_pass(eng, store, settings, read_chunks, sid, prepared, progress, checkpoint_seconds)
                df_id = store.save_df(dfo, sid)
                store.drop_df_checkpoint()
            else:
                df_id = dfo.digest()
            handle = eng.ship_df(dfo, store.folder)
            if prepared is not None:
                n_chunks = -(-dfo.n_units // chunk_size)
                score_chunks = lambda: prepared.read(n_chunks, read_chunks)  # noqa: E731

        ids = IdTracker()
        keys: list[str] = []
        n_rows = 0

        def tasks():
            nonlocal n_rows
            for c in score_chunks():
                ids.add(c.ids)
                n_rows += len(c)
                key = store.chunk_key(c.digest, df_id)
                keys.append(key)
                if not store.has(c.index, key):
                    yield c, settings, handle

        done = 0
        for res in eng.map(score_pass, tasks()):
            store.save(res.index, keys[res.index], res)
            done += res.n
            if progress is not None:
                progress("score", done)
        suspects = ids.suspects()
        if suspects:
            err = duplicate_error(rows, (r for c in read_chunks() for r in
                                          zip(c.lines or [None] * len(c), c.ids or [None] * len(c), c.cands, c.refs)),
                                   suspects)
            if err is not None:
                raise err

        # Assembly, in input order.
        writer = RowFileWriter(out_path, fmt, metrics) if out_path is not None else None
        per_caption: dict[str, list[np.ndarray]] = {m: [] for m in metrics}
        stats: dict[str, list[Statistics]] = {}
        nrefs: set[int] = set()
        line_break = False
        emptied: dict[str, int] = {}
        forms = [0, 0]  # texts holding composed / decomposed Unicode
        signatures: dict[str, str] = {}
        try:
            for i, key in enumerate(keys):
                r = store.load(i, key)
                if r is None:
                    raise RuntimeError(f"chunk {i} result missing or damaged in {store.folder} after scoring")
                if writer is not None:
                    rids = r.ids if r.ids is not None else list(range(i * chunk_size, i * chunk_size + r.n))
                    writer.write(r.fragment, rids, r.per_caption)
                if keep_per_caption:
                    for m in metrics:
                        per_caption[m].append(r.per_caption[m])
                for fam, st in r.stats.items():
                    stats.setdefault(fam, []).append(st)
                nrefs |= r.nrefs
                line_break |= r.line_break
                for k, v in r.emptied.items():
                    emptied[k] = emptied.get(k, 0) + v
                for k, v in enumerate(r.extra.get("unicode_forms", (0, 0))):
                    forms[k] += v
                if not signatures:
                    signatures = dict(r.signatures)
            tok = tokenizer_id(tokenizer) + (LINE_BREAK_TAG if line_break else "")
            nrefs_s = str(next(iter(nrefs))) if len(nrefs) == 1 else "var"
            raw_tok = "none" + (LINE_BREAK_TAG if line_break else "")  # families given the untokenized text
            signatures = {m: with_fields(signatures[m], tok=tok if family_for(m).text_input == "tokenized" else raw_tok,
                                         nrefs=nrefs_s) for m in metrics}
            merged = {fam: _merged(fam, parts) for fam, parts in stats.items()}
            corpus = {m: float(merged[family_for(m).family].corpus()[m]) for m in metrics}
            arrays = {m: np.concatenate(v) if v else np.zeros(0) for m, v in per_caption.items()}
            if writer is not None:
                writer.commit(corpus, signatures)  # rows and signatures as a pair (rowfiles.commit_pair)
                writer = None
        finally:
            if writer is not None:
                writer.abort()
        details: dict[str, Any] = {fam: d for fam, st in merged.items() if (d := st.aggregate.details(st))}
        if emptied:
            details["input"] = {"empty_after_tokenization": emptied}
            warnings.warn(f"{', '.join(f'{v} {k}' for k, v in emptied.items())} empty after the {tokenizer} "
                          "tokenizer (scored as empty text by the n-gram metrics); counted in "
                          "result.details['input']", stacklevel=2)
        from ..text.unicode_forms import mixed_message

        if (mixed := mixed_message(*forms)) is not None:
            warnings.warn(mixed, UserWarning, stacklevel=2)
        result = Result(corpus=corpus, per_caption=arrays if keep_per_caption else {},
                        signatures=signatures, n=n_rows, details=details)
    finally:
        eng.close()
        if temporary:
            store.remove()
    store.remove()  # done: the chunks are in the output
    return result


__all__ = ["score_stream", "streamable", "DEFAULT_CHUNK", "Chunk"]
