"""``score_stream``: score an input of any length in bounded memory, resumably, on any engine.

1. df pass, the corpus pre-passes (only for CIDEr with df from the scored set and the families
   whose instance has a pre-pass, BERTScore with idf, and only when the input is longer than one
   chunk: :mod:`capeval.stream.firstpass`): every chunk is validated and its reference n-grams
   counted; the counts are summed into a hashed df table (:mod:`capeval.stream.dfstore`) saved
   in the run folder; the other families' chunk states are merged with ``+`` and saved there.
2. score pass: every chunk is scored by :func:`capeval.score` with that df and those states, on the engine; each
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
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import InputError
from ..metrics.registry import METRIC_SETS
from ..result import Result
from .assemble import assemble
from .chunks import DEFAULT_CHUNK, Settings, pickle_user_classes, prepassed, remember_plan, score_pass
from .firstpass import df_handle
from .ids import IdTracker, duplicate_error
from .images import image_rows
from .readers import Chunk, chunks, open_rows
from .codec import Unstorable
from .prepared import content_digest
from .store import RunStore
from ..rowfiles import row_format



def streamable(metrics: Iterable[str], options: dict[str, dict] | None = None) -> bool:
    """Whether every metric can be streamed with ``options`` (its family's
    ``Metric.cannot_stream``)."""
    from ..plan import ScoringPlan

    try:
        return not ScoringPlan.build(list(metrics), options=options).cannot_stream
    except Exception:
        return False


def _plan(metrics, plan, tokenizer: str, options):
    """The run's plan: the caller's, or one built from ``metrics`` (names, or user metrics
    registered here and pickled to the workers) and ``options``."""
    from ..plan import as_plan

    if plan is None and metrics is None:
        metrics = METRIC_SETS["ngram"]
    if metrics is not None:
        metrics = _names(metrics)
        if not metrics:
            raise InputError("no metrics requested")
    plan = as_plan(metrics, plan, tokenizer=tokenizer, options=options)
    if plan.columns:
        raise InputError("scores files are joined by unit id in benchmark runs (capeval bench --scores); a streamed "
                         "run scores metrics only")
    return plan


def _settings(plan, allow_empty, line_breaks, output_format):
    from ..text import tokenizer_id
    from ..validation import check_line_break_policy

    reasons = plan.cannot_stream
    bad = [m for f in plan.families if f.family in reasons for m in f.names]
    if bad:
        why = "; ".join(dict.fromkeys(reasons.values()))
        raise InputError(f"metric(s) {', '.join(bad)} cannot be streamed: {why}. Score them with capeval.score "
                         "(CLI: without --jobs/--engine/--chunk-size)")
    tokenizer = plan.tokenizer
    tokenizer_id(tokenizer)
    from ..text import BATCH_CONTEXT

    if tokenizer in BATCH_CONTEXT:
        raise InputError(f"tokenizer {tokenizer!r} reads each caption in the context of the next one, which a "
                         "chunk boundary would change; stream with tokenizer 'ptb' or score in memory")
    check_line_break_policy(line_breaks)
    # The plan checked every family's options by name, requested or not.
    options = {fam: dict(opt or {}) for fam, opt in plan.options.items()}
    df_source = None
    from ..metrics.registry import get_family

    for fam, opt in options.items():
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
    classes = [f.cls for f in plan.families]
    user_ids, user_classes = pickle_user_classes(classes)
    settings = Settings(plan.metrics, tokenizer, bool(allow_empty), line_breaks, frozen, output_format,
                        user_ids, user_classes, prepassed=prepassed(classes, options))
    remember_plan(settings, plan.with_options(options))
    needs_df = any(cls.uses_df for cls in classes)
    return settings, needs_df, df_source


def score_stream(
    rows,
    metrics: Iterable | None = None,
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
    images: str | Path | None = None,
    plan=None,
) -> Result:
    """Score rows in chunks of ``chunk_size``; same numbers as :func:`capeval.score`.

    Parameters
    ----------
    rows : path or iterable
        A ``.jsonl``/``.csv``/``.tsv``/``.parquet`` file (read in chunks), or an iterable of
        ``(candidate, references)``, ``(id, candidate, references)`` or mappings with
        ``candidate``, ``references`` and optionally ``id`` and ``image``. A one-shot iterator
        is spilled to the run folder when it must be read twice (the pre-pass).
    metrics, plan : output names of families that stream (``Metric.cannot_stream``) or user
        metrics, as :func:`capeval.score` takes them (default: the n-gram set); or the run's
        :class:`~capeval.plan.ScoringPlan` (then ``options`` is None, ``metrics`` picks some).
    output : path, optional
        ``.jsonl`` (one object per row), ``.csv`` or ``.parquet`` per-row scores, written in
        input order, plus ``<name>.signatures.json`` with corpus scores and signatures.
    chunk_size, jobs, engine, address
        Rows per chunk; ``jobs`` worker processes (``engine="local"``) or Ray tasks
        (``engine="ray"``, on the cluster at ``address`` or a local Ray with ``jobs`` CPUs).
    run_dir : path, optional
        Folder for chunk results and pre-pass states (default ``<output>.capeval-run``, or a
        temporary one): a killed run resumes there from its complete chunks; removed when done.
    keep_per_caption : bool, optional
        Return per-caption arrays in the Result (default: only when there is no output file).
    progress : callable, optional
        ``progress(stage, rows_done)`` with stage ``"df"`` or ``"score"`` after every chunk.
    checkpoint_seconds : float
        How often the pre-pass saves its states so far (a killed pre-pass resumes from there).
    images : path, optional
        Image directory for the families that read images (CLI ``--images``): each row's
        ``image`` (JSONL/CSV field, a mapping's key) is looked up under it as ``capeval score``
        does (:func:`capeval.imagedir.item_images`). Without it, a file's image names are paths
        relative to its folder, an iterable's are paths as given.
    tokenizer, allow_empty, line_breaks, options : as :func:`capeval.score`.
    """
    from .engines import make_engine

    out_path, fmt = _output(rows, output, chunk_size)
    plan = _plan(metrics, plan, tokenizer, options)
    settings, needs_df, df_file = _settings(plan, allow_empty, line_breaks, fmt)
    pictures = _image_rules(rows, images, plan)
    store, temporary = _run_store(out_path, run_dir, settings, chunk_size, df_file, needs_df,
                                  pictures.fingerprint() if pictures is not None else "none", _resources(plan))
    eng = None
    try:
        eng = make_engine(engine, jobs, address)
        source = _Input(rows, chunk_size, store, pictures)
        handle, df_id, states, score_chunks = _first_pass(eng, store, settings, source, df_file, needs_df,
                                                          chunk_size, progress, checkpoint_seconds)
        keys, n_rows = _score_all(eng, store, settings, source, score_chunks, handle, df_id, progress, states)
        source.verify()  # the rows scored are the rows the first pass counted
        result = assemble(store, keys, list(plan.metrics), out_path=out_path, fmt=fmt, chunk_size=chunk_size,
                          tokenizer=plan.tokenizer, n_rows=n_rows, families=plan.family_map(),
                          keep_per_caption=out_path is None if keep_per_caption is None else keep_per_caption)
    finally:
        if eng is not None:
            eng.close()
        store.remove() if temporary else store.close()  # else the folder stays for a resume, unlocked
    store.remove()  # done: the chunks are in the output
    return result


def _image_rules(rows, images, plan):
    """The image rules of the run (:func:`~capeval.stream.images.image_rows`); None for a run
    that neither has images nor a family that reads them."""
    if images is None and not plan.reads_images:
        return None
    return image_rows(rows, images, [f.cls for f in plan.families])


def _first_pass(eng, store: RunStore, settings: Settings, source, df_file, needs_df: bool, chunk_size: int,
                progress, checkpoint_seconds: float):
    """``(df handle, pre-pass states' id, states, chunks to score)`` of the first pass
    (:func:`~capeval.stream.firstpass.df_handle`); a run with no corpus pre-pass and no df file
    to ship has none, and its rows are read once, to score."""
    if df_file is None and not needs_df and not settings.prepassed:
        return None, "none", None, source.read
    return df_handle(eng, store, settings, source, df_file, needs_df, chunk_size, progress, checkpoint_seconds)


def _output(rows, output, chunk_size: int) -> tuple[Path | None, str | None]:
    """The output path and its row-file format, refused when it is none or is the input (and
    the chunk size checked first)."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise InputError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    if output is None:
        return None, None
    out_path = Path(output)
    fmt = row_format(out_path)
    if fmt is None:
        raise InputError(f"{out_path}: streamed output is .jsonl, .csv or .parquet (one row per caption)")
    from ..outputs import same_file

    if isinstance(rows, (str, Path)) and same_file(rows, out_path):
        raise InputError(f"{out_path}: the output would overwrite the input")
    return out_path, fmt


def _names(metrics) -> list[str] | str:
    """Output names; a ``UserMetric`` class or instance, or a callable, registered for this
    process (and pickled to the workers) under its name, as :func:`capeval.score` takes them.
    A string (one name or a comma-separated list) is left for the plan to read, as there."""
    from ..metrics.user import as_metric_name

    if isinstance(metrics, str):
        return metrics
    return [m if isinstance(m, str) else as_metric_name(m) for m in metrics]


def _resources(plan) -> dict[str, Any]:
    """What each family reads beyond its options (the files its resources resolve to, a
    model's content digest), for the run's fingerprint: chunks scored with other vectors (say
    ``CAPEVAL_GLOVE_6B_50D`` pointed elsewhere) are another run's, not resumed."""
    from ..metrics.registry import plugin_origin
    from ..service.cache import resource_state

    out: dict[str, Any] = {}
    for f in plan.families:
        opts = dict(f.options or {})
        names = f.cls.resources_for(opts)
        out[f.family] = [resource_state(names) if names is None or names else {}, f.cls.cache_token(opts),
                         plugin_origin(f.cls)]
    return out


def _run_store(out_path: Path | None, run_dir, settings: Settings, chunk_size: int, df_file,
               needs_df: bool, images_id: str = "none", resources: dict | None = None) -> tuple[RunStore, bool]:
    """The run folder (``<output>.capeval-run``, ``run_dir``, or a temporary one without
    output) under the run's fingerprint, and whether it is temporary."""
    if run_dir is None:
        temporary = out_path is None
        folder = Path(tempfile.mkdtemp(prefix="capeval-run-")) if out_path is None else \
            out_path.with_name(out_path.name + ".capeval-run")
    else:
        temporary, folder = False, Path(run_dir)
    df_label = "file:" + str(df_file) if df_file is not None else ("corpus" if needs_df else "none")
    if df_file is not None and not isinstance(df_file, (str, Path)):
        df_label = f"object:{df_file.source}"
    fingerprint = {"version": __version__, "settings": repr(settings), "chunk_size": chunk_size, "df": df_label,
                   "images": images_id, "resources": resources or {}}
    return RunStore(folder, fingerprint, temporary=temporary), temporary


class _Input:
    """The rows, read once per pass: a file or a list is read again; a one-shot iterator is
    spilled to the run folder on the first read. Peeks at two chunks: an input of one chunk is
    scored as one corpus (no df pass needed)."""

    def __init__(self, rows, chunk_size: int, store: RunStore, images=None):
        self.rows, self.chunk_size, self.store = rows, chunk_size, store
        self.images = images if images is not None and images.wanted else None
        self.one_shot = not isinstance(rows, (str, Path)) and iter(rows) is rows
        self.spilled: list[int] = []
        self._identity: str | None = None
        first: Any = self._chunks()  # a generator: closed when not spilled
        head = list(itertools.islice(first, 2))
        if self.one_shot:  # keep the rows for the second read
            for c in itertools.chain(head, first):
                try:
                    store.save(c.index, "input", c, kind="input")
                except Unstorable as e:
                    raise InputError(f"rows {c.start}-{c.start + len(c) - 1} cannot be kept in the run folder for "
                                     f"the second pass ({e}); give ids as strings or integers, or pass a list or "
                                     "a file") from None
                self.spilled.append(c.index)
        else:
            first.close()  # a file reader: reopened for each pass
        if not head:
            raise InputError(f"{rows}: no records" if isinstance(rows, (str, Path)) else "no rows to score")
        self.single = len(head) == 1

    def read(self):
        if not self.one_shot:
            return self._chunks()
        return (self._spilled(i) for i in self.spilled)

    def _spilled(self, i: int):
        c = self.store.load(i, "input", kind="input")
        if c is None:
            raise InputError(f"{self.store.folder}: the rows kept for the second pass (chunk {i}) changed or vanished "
                             "during the run; run it again")
        return c

    def identity(self) -> str | None:
        """The input file's content digest, taken once, before the first pass (None for an
        iterable): a resumed run reuses the df and prepared chunks only of the same bytes."""
        if self._identity is None:
            self._identity = content_digest(self.rows)
        return self._identity

    def verify(self) -> None:
        """An input whose bytes changed since the first pass (edited, or grown by an append) is
        refused by name: its rows were counted in one state and scored in another."""
        if self._identity is None:
            return
        now = content_digest(self.rows)
        if now != self._identity:
            raise InputError(f"{self.rows}: the input file changed while it was being scored (its content is not "
                             "what the first pass read: edited, or appended to); nothing was written. Let it "
                             "settle, then run the command again")

    def _chunks(self):
        if self.images is None:
            return chunks(open_rows(self.rows), self.chunk_size)
        return chunks(open_rows(self.rows, with_image=True), self.chunk_size, images=self.images.resolve)


def _score_all(eng, store: RunStore, settings: Settings, source: _Input, score_chunks, handle, df_id: str,
               progress, states=None) -> tuple[list[str], int]:
    """Every chunk scored and saved (those a killed run saved are kept), with the df ``handle``
    and the pre-pass ``states`` as the engine shipped them; the chunk keys in input order and
    the row count. Duplicate ids across the whole input are an error naming both."""
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
                yield c, settings, handle, states

    done = 0
    for res in eng.map(score_pass, tasks()):
        store.save(res.index, keys[res.index], res)
        done += res.n
        if progress is not None:
            progress("score", done)
    suspects = ids.suspects()
    if suspects:
        rows = (r for c in source.read() for r in
                zip(c.lines or [None] * len(c), c.ids or [None] * len(c), c.cands, c.refs))
        err = duplicate_error(source.rows, rows, suspects)
        if err is not None:
            raise err
    return keys, n_rows


__all__ = ["score_stream", "streamable", "DEFAULT_CHUNK", "Chunk"]
