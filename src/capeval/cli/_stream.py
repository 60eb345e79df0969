"""The streamed path of ``capeval score`` (kept apart from score.py's argument parsing).

``capeval score`` streams when every requested metric streams (``Metric.cannot_stream`` with its
options: every family but those whose rows depend on the whole input with no pre-pass, and the
model families unless each text runs alone), the input is JSONL/CSV/TSV/Parquet, the output (if any) is a row file (.jsonl, .csv, .parquet)
and no df is to be saved; or whenever --jobs, --engine or --chunk-size is given (then the
other conditions are required, with an error saying which failed). Numbers are identical
either way.
"""
from __future__ import annotations

from pathlib import Path


def stream_reason(input: Path, annotations, output, plan, save_cider_df) -> str | None:
    """Why this run of ``plan`` (a :class:`~capeval.plan.ScoringPlan`) cannot stream, or None
    when it can."""
    from ..stream.readers import STREAM_SUFFIXES
    from ..rowfiles import row_format

    if annotations is not None:
        return "COCO results input (--annotations) is read whole"
    if input.suffix.lower() not in STREAM_SUFFIXES:
        return f"{input.suffix or 'this'} input does not stream (use {', '.join(STREAM_SUFFIXES)})"
    if output is not None and row_format(output) is None:
        return f"{output.suffix or 'this'} output is one JSON document (use .jsonl, .csv or .parquet)"
    reasons = plan.cannot_stream
    for name in plan.metrics:
        why = reasons.get(plan.family_of(name).family)
        if why is not None:
            return f"{name} does not stream ({why})"
    if save_cider_df is not None:
        return "--save-cider-df needs the whole reference set in memory"
    return None


def run_streamed(input: Path, output, plan, *, allow_empty, line_breaks, chunk_size, jobs, engine, address, quiet,
                 err, images=None):
    """Score ``plan`` with :func:`capeval.score_stream` under a progress display; returns the Result."""
    from ..stream import DEFAULT_CHUNK, score_stream

    kwargs = dict(output=output, plan=plan, tokenizer=plan.tokenizer, allow_empty=allow_empty,
                  line_breaks=line_breaks, chunk_size=chunk_size or DEFAULT_CHUNK, jobs=jobs, engine=engine,
                  address=address, images=images)
    if quiet:
        return score_stream(input, **kwargs)
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    total = row_total(input)
    columns = [TextColumn("{task.description}"), TextColumn("{task.completed:,}{task.fields[of]} rows"),
               TimeElapsedColumn()]
    if total is not None:  # a known size: a bar and an ETA from the row rate
        columns[1:1] = [BarColumn()]
        columns += [TextColumn("ETA"), TimeRemainingColumn()]
    from rich.markup import escape

    from ..progress import noting

    # Notes of long one-time steps (METEOR's resource conversion) made in this process; a
    # --jobs worker's go to its log.
    with Progress(*columns, console=err, transient=True) as prog, \
            noting(lambda msg: prog.console.print(f"[dim]{escape(msg)}[/dim]")):
        tasks: dict[str, int] = {}

        def progress(stage: str, done: int) -> None:
            if stage not in tasks:
                label = {"df": "corpus pre-pass", "score": "scoring"}.get(stage, stage)  # CIDEr's df, idf
                tasks[stage] = prog.add_task(label, total=total, of=f" of {total:,}" if total is not None else "")
            prog.update(tasks[stage], completed=done)

        return score_stream(input, progress=progress, **kwargs)


def row_total(input: Path) -> int | None:
    """Rows of a JSONL or Parquet input, known before scoring (one fast pass over the lines; the
    Parquet footer), for the progress bar's total and ETA; None for CSV/TSV, whose rows may span
    lines, and for anything unreadable (the reader then names the problem)."""
    suffix = input.suffix.lower()
    try:
        if suffix in (".jsonl", ".ndjson"):
            with input.open("rb") as f:  # blank lines hold no row, as the reader skips them
                return sum(1 for line in f if line.strip())
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return pq.ParquetFile(input).metadata.num_rows
    except (OSError, ImportError, ValueError):
        return None
    return None
