"""``capeval score`` and ``capeval metrics``."""
from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from ..errors import CapevalError
from ..extras import install_command
from ..metrics.registry import METRIC_SETS
from ..plan import ScoringPlan
from ._console import error, literal, say, terminal_console

console = Console()
err = Console(stderr=True)


def _parse_metrics(text: str) -> list[str]:
    """Comma-separated names; a set name (``coco``, ``ngram``) stands for its metrics."""
    from ..metrics.registry import METRIC_SETS

    names = [m.strip() for m in text.split(",") if m.strip()]
    return list(dict.fromkeys(n for m in names for n in METRIC_SETS.get(m, (m,))))


def parse_options(items: list[str]) -> dict[str, dict]:
    """``["wmd.vectors=spacy-md", "cider_d.sigma=6"]`` → ``{"wmd": {"vectors": "spacy-md"}, ...}``."""
    import json

    from ..errors import InputError

    out: dict[str, dict] = {}
    for item in items:
        key, sep, value = item.partition("=")
        fam, dot, name = key.partition(".")
        if not sep or not dot or not fam or not name:
            raise InputError(f"--option {item!r}: expected FAMILY.KEY=VALUE (e.g. wmd.vectors=spacy-md)")
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        out.setdefault(fam.strip(), {})[name.strip()] = parsed
    # Checked (every family's, requested or not) where the run's ScoringPlan is built.
    return out


def _score_with_progress(score, families: list[str], cands, refs, names, **kwargs):
    """Run ``score`` under a progress bar: one bar per metric family that advances per chunk
    (capeval.progress) with elapsed time and an ETA from the chunk rate."""
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
    from rich.markup import escape

    from ..progress import noting

    with Progress(*columns, console=err, transient=True) as prog, \
            noting(lambda msg: prog.console.print(f"[dim]{escape(msg)}[/dim]")):
        tasks: dict[str, TaskID] = {}

        def on_chunk(family: str, done: int, total: int) -> None:
            if family not in tasks:
                k = families.index(family) + 1 if family in families else len(tasks) + 1
                tasks[family] = prog.add_task(escape(f"[{k}/{len(families)}] {family}"), total=total)
            prog.update(tasks[family], completed=done, total=total)

        return score(cands, refs, names, on_chunk=on_chunk, **kwargs)


def score_cmd(
    input: Path = typer.Option(..., "--input", "-i", help="JSONL ({id, candidate, references}), CSV or TSV (header: id, candidate, ref1, ref2, ...; strict: unknown columns and ragged rows are errors), or COCO results .json with --annotations."),
    annotations: Optional[Path] = typer.Option(None, "--annotations", "-a", help="COCO captions annotation JSON (with COCO results input)."),
    metrics: Optional[str] = typer.Option(None, "--metrics", "-m", help="Comma-separated metric names (see `capeval metrics`) or set names (coco, ngram). Default: the coco set (" + ",".join(METRIC_SETS["coco"]) + "), where a metric that cannot score the input (CIDEr-D on a single caption without --cider-df) is skipped with the reason; named metrics are all scored or the command fails."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write per-caption scores: .json (corpus, per_caption, signatures, ids), or a row file .jsonl, .csv or .parquet (one row per caption) with the corpus scores and signatures in <name>.signatures.json beside it (x.csv -> x.signatures.json)."),
    tokenizer: str = typer.Option("ptb", help="ptb (pure Python, default), ptb-java (the original jar), ptb-batch (ptb with the jar's context across captions of one batch; in memory only) or none."),
    cider_df: Optional[Path] = typer.Option(None, "--cider-df", help="Saved df file for CIDEr/CIDEr-D (corpus-independent scores)."),
    save_cider_df: Optional[Path] = typer.Option(None, "--save-cider-df", help="Write the df computed from these references."),
    allow_empty: bool = typer.Option(False, "--allow-empty", help="Score empty or blank candidates and references as pycocoevalcap does (an empty candidate scores 0) instead of failing."),
    strict_line_breaks: bool = typer.Option(False, "--strict-line-breaks", help="Refuse captions holding a line break (\\n, \\r, U+2028, ...) instead of reading each as a space (default, as pycocoevalcap does for \\n)."),
    option: list[str] = typer.Option([], "--option", "-O", help="Metric option FAMILY.KEY=VALUE, repeatable (e.g. wmd.vectors=spacy-md, wembsim.combine=max, meteor.workers=2). Values are parsed as JSON when possible."),
    images: Optional[Path] = typer.Option(None, "--images", help="Image directory for metrics that read images: "
                                          "each item's image (JSONL/CSV 'image' field, or the COCO image_id as "
                                          "COCO_val2014_%012d.jpg or <id>.jpg) is looked up under it, recursively "
                                          "by file name."),
    normalize: Optional[str] = typer.Option(None, "--normalize", help="nfc: compose Unicode (NFC) in every text "
                                            "before scoring, shown as +norm=nfc in the signatures. Default: texts "
                                            "as given (as pycocoevalcap), with a warning when they mix NFC and NFD."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    jobs: int = typer.Option(1, "--jobs", "-j", help="Worker processes (or Ray CPUs) of a streamed run (docs/SCALE.md). A run that cannot stream is refused with the reason; in memory, a metric's own processes are its option (-O spice.n_process=N)."),
    engine: str = typer.Option("local", "--engine", help=f"local (this machine) or ray (needs the ray extra: {install_command(['ray'])})."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address for --engine ray (default: start a local Ray)."),
    chunk_size: Optional[int] = typer.Option(None, "--chunk-size", min=1, help="Rows per streamed chunk (default 10000)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace existing output files (-o, its "
                                   "<name>.signatures.json, --save-cider-df); refused by default. An output "
                                   "that is an input file is always refused."),
    mkdirs: bool = typer.Option(False, "--mkdirs", help="Create missing folders of the output paths (refused by default: a mistyped path must not create folders)."),
    judge_url: Optional[str] = typer.Option(None, "--judge-url", help="Model judges (clair, fleur, reffleur, pairjudge): base URL of an OpenAI-compatible endpoint (http://127.0.0.1:8000/v1; docs/JUDGES.md). Without it, --judge-model is a local transformers directory."),
    judge_model: Optional[str] = typer.Option(None, "--judge-model", help="Model judges: the endpoint's model name, or a local model directory."),
    judge_allow_unanswered: Optional[int] = typer.Option(None, "--judge-allow-unanswered", min=0, help="Model judges: rows the judge may leave unanswered (scored NaN, counted in the signature) before the run fails (default 0)."),
) -> None:
    """Score candidate captions against references; print corpus scores with signatures."""
    from ..inputs import write_result

    try:
        # Before any work: a refused output means nothing is scored and nothing written.
        _check_score_outputs(input, annotations, output, cider_df, save_cider_df, overwrite, mkdirs)
        names = _parse_metrics(metrics if metrics is not None else ",".join(METRIC_SETS["coco"]))
        asked = names if metrics is not None else None  # None: the default set, which may skip
        line_breaks = "refuse" if strict_line_breaks else "space"
        plan = ScoringPlan.build(asked, tokenizer=tokenizer, options=parse_options(option))  # names resolved once
        plan = with_judge(plan, judge_url, judge_model, judge_allow_unanswered)
        _refuse_pairwise(plan)
        families, options = _family_options(plan, cider_df, save_cider_df)
        plan = plan.with_options(options)  # the df files too
        # Streaming (bounded memory, resumable, --jobs/--engine) when the run allows it: cli/_stream.py.
        why_not, jobs, plan = _why_not_streamed(input, annotations, output, plan, save_cider_df, normalize,
                                                jobs=jobs, engine=engine, address=address, chunk_size=chunk_size,
                                                defaulted=asked is None)
        streamed = why_not is None
        if streamed:
            from ._stream import run_streamed
            from ._ending import worker_died

            with worker_died(plan):  # a pool or Ray worker that died: an error naming the metrics
                result = run_streamed(input, output, plan, allow_empty=allow_empty, line_breaks=line_breaks,
                                      chunk_size=chunk_size, jobs=jobs, engine=engine, address=address,
                                      quiet=quiet, err=err, images=images)
        else:
            ids, cands, refs, image_list = _read_with_images(input, annotations, images, plan)
            result = _score_in_memory(cands, refs, plan, families, quiet, ids=ids, allow_empty=allow_empty,
                                      line_breaks=line_breaks, images=image_list, normalize=normalize)
    except (CapevalError, OSError) as e:  # OSError: an unreadable input, a full disk under the run folder
        error(err, e)
        raise typer.Exit(2) from None

    _print_result(result, input)
    if output is not None:
        if not streamed:
            try:
                write_result(result, output, ids)
            except (CapevalError, OSError) as e:
                error(err, e)
                raise typer.Exit(2) from None
        say(console, f"per-caption scores written to {output}")


def with_judge(plan: ScoringPlan, url, model, allow) -> ScoringPlan:
    """The --judge-* flags as options of every model-judge family of the plan (an -O option of
    the same key wins)."""
    from ..judges.metric import JudgeMetric

    given = {k: v for k, v in (("url", url), ("model", model), ("allow_unanswered", allow)) if v is not None}
    judges = [f.cls.family for f in plan.families if issubclass(f.cls, JudgeMetric)]
    if not given or not judges:
        return plan
    options = {fam: dict(opt or {}) for fam, opt in plan.options.items()}
    for fam in judges:
        options[fam] = {**given, **options.get(fam, {})}
    return plan.with_options(options)


def _refuse_pairwise(plan: ScoringPlan) -> None:
    from ..errors import InputError

    pairs = [f.cls.family for f in plan.families if f.cls.pairwise]
    if pairs:
        raise InputError(f"{', '.join(pairs)} judge(s) pairs of captions, not the rows of a file: run it with "
                         "capeval bench (pascal50s, abstract50s, or --file with a, b, references, preferred)")


def _check_score_outputs(input, annotations, output, cider_df, save_cider_df, overwrite: bool, mkdirs: bool) -> None:
    from ..inputs import output_files
    from ..outputs import check_outputs

    outs = output_files(output) if output is not None else []
    if save_cider_df is not None:
        outs.append((save_cider_df, None))
    check_outputs(outs, [input, annotations, cider_df], overwrite=overwrite, mkdirs=mkdirs, mkdirs_flag="--mkdirs")


def _family_options(plan: ScoringPlan, cider_df, save_cider_df) -> tuple[list[str], dict]:
    """The requested families in order, and each family's options: the df files for the
    families that use CIDEr's df, then the user's ``-O`` options (the plan's)."""
    classes = list(dict.fromkeys(plan.family_of(n) for n in plan.metrics))
    options: dict = {}
    if (cider_df is not None or save_cider_df is not None) and not any(cls.uses_df for cls in classes):
        from ..errors import InputError
        from ..metrics.registry import families_with

        flag = "--cider-df" if cider_df is not None else "--save-cider-df"
        raise InputError(f"{flag} is for the families that take CIDEr's df ({', '.join(families_with('uses_df'))}); "
                         f"none of the requested metrics is one ({', '.join(plan.metrics)})")
    for fam in (cls.family for cls in classes if cls.uses_df):
        opt = {}
        if cider_df is not None:
            opt["df"] = str(cider_df)
        if save_cider_df is not None:
            opt["save_df"] = str(save_cider_df)
        if opt:
            options[fam] = opt
    for fam, opt in plan.options.items():
        options.setdefault(fam, {}).update(opt)
    return [cls.family for cls in classes], options


def _why_not_streamed(input, annotations, output, plan: ScoringPlan, save_cider_df, normalize, *, jobs: int,
                      engine: str, address, chunk_size, defaulted: bool = False) -> tuple[str | None, int, ScoringPlan]:
    """Why the run is scored in memory (None: it streams), the streamed worker count, and the
    plan. The streaming options (``--jobs``, ``--engine``, ``--address``, ``--chunk-size``)
    always stream: a run that cannot is refused with the reason, whatever else is in ``-m``,
    never scored in memory instead."""
    from ._stream import stream_reason

    why_not = stream_reason(input, annotations, output, plan, save_cider_df)
    if why_not is None and normalize is not None:
        why_not = "--normalize is given (streamed runs score the text as it is)"
    given = [flag for flag, on in (("--jobs", jobs != 1), ("--engine", engine != "local"), ("--address", bool(address)),
                                   ("--chunk-size", chunk_size is not None)) if on]
    if why_not is None and defaulted and not given:
        # In memory the default set adapts to the input (a family that cannot score it, CIDEr-D on
        # one caption, is skipped saying why); asked to stream, every family of it is scored.
        why_not = "the default metric set is scored in memory, where it adapts to the input"
    if why_not is not None and given:
        from ..errors import InputError

        raise InputError(_stream_refusal(given, why_not, plan, jobs))
    return why_not, jobs, plan


def _stream_refusal(given: list[str], why_not: str, plan: ScoringPlan, jobs: int) -> str:
    """The reason a streaming option is refused, and the ways out: the same command without the
    option scores in memory, where a family with its own processes (``Metric.jobs_option``)
    takes them as an ``-O`` option."""
    flags = "/".join(given)
    it = "it" if len(given) == 1 else "them"
    n = max(jobs, 2)
    own = [f"-O {f.cls.family}.{f.cls.jobs_option}={n} runs {f.cls.family} on {n} processes" for f in plan.families
           if f.cls.jobs_option is not None]
    there = f" (there, {'; '.join(own)})" if own else ""
    return f"{flags} stream{'s' if len(given) == 1 else ''} the input, but {why_not}. Run without {it} to score in memory{there}."


def _score_in_memory(cands, refs, plan: ScoringPlan, families: list[str], quiet: bool, **kwargs):
    import warnings

    from ..api import score

    run = score if quiet else partial(_score_with_progress, score, families)
    with warnings.catch_warnings():  # a skipped default metric is printed below, in one line
        warnings.filterwarnings("ignore", message="default metrics skipped", category=UserWarning)
        return run(cands, refs, None, plan=plan, tokenizer=plan.tokenizer, **kwargs)


def _print_result(result, input: Path) -> None:
    """The corpus scores, the skipped default metrics and every signature."""
    table = Table(title=literal(f"capeval — {result.n} captions ({input.name})"))
    table.add_column("metric")
    table.add_column("corpus", justify="right")
    for name, value in result.corpus.items():
        table.add_row(literal(name), f"{value:.6f}")
    console.print(table)
    for why in dict.fromkeys(result.details.get("skipped", {}).values()):
        say(err, f"skipped {why}", soft_wrap=True, style="yellow")
    console.print("signatures:")
    for name, sig in result.signatures.items():
        say(console, f"  {name}: {sig}", soft_wrap=True)


def _read_with_images(input: Path, annotations, images: Path | None, plan: ScoringPlan | list[str]):
    """The input, and each item's image path when ``--images`` is given or a metric of ``plan``
    (or of these names) reads images: names resolve under ``--images`` (recursively), or,
    without it, as paths relative to the input file."""
    from ..errors import InputError
    from ..imagedir import item_images
    from ..inputs import read_input, read_input_images

    if not isinstance(plan, ScoringPlan):
        plan = ScoringPlan.build(list(plan))
    if images is None and not plan.reads_images:
        return (*read_input(input, annotations), None)
    ids, cands, refs, found = read_input_images(input, annotations)
    if annotations is not None and images is None:  # every result names its image_id
        raise InputError(f"{input}: COCO image ids need --images DIR to find their files")
    required = images is not None or bool(plan.image_metrics)
    # The rules a streamed run applies too, chunk by chunk (capeval.stream.images).
    return ids, cands, refs, item_images(str(input), ids, found, directory=images, base=input.parent,
                                         required=required)


def _metric_rows() -> list[dict]:
    """One dict per registered output: what ``capeval metrics`` prints, and its ``--json``."""
    import math
    import warnings

    from rich.markup import escape

    from ..extras import missing_extras
    from ..metrics.registry import family_for, list_metrics, plugin_errors

    with warnings.catch_warnings():  # named below, one line each
        warnings.simplefilter("ignore")
        metrics = list_metrics()
    for problem in plugin_errors():
        err.print(f"[yellow]plug-in not loaded:[/yellow] {escape(problem)}", soft_wrap=True, highlight=False)
    rows = []
    for m in metrics:
        extras = list(family_for(m.name).extras)
        rows.append(dict(name=m.name, family=m.family, variant=m.variant,
                         # JSON has no infinity: an unbounded end is null
                         range=[None if math.isinf(v) else v for v in m.range],
                         higher_is_better=m.higher_is_better, extras=extras,
                         missing_extras=missing_extras(extras), description=m.description))
    return rows


def _range_text(r: list) -> str:
    lo = "-inf" if r[0] is None else f"{r[0]:g}"
    hi = "inf" if r[1] is None else f"{r[1]:g}"
    return f"[{lo}, {hi}]"


def metrics_cmd(
    as_json: bool = typer.Option(False, "--json", help="Every output as JSON: name, family, variant, range "
                                 "(null: unbounded), higher_is_better, extras, missing_extras, description."),
) -> None:
    """List every registered metric output: one line each with its variant, range and the extras
    it needs (and whether they are installed)."""
    import json

    rows = _metric_rows()
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    lacking = list(dict.fromkeys(e for r in rows for e in r["missing_extras"]))

    def needs(r: dict) -> str:  # an extra that is not installed is starred
        return ", ".join(e + "*" * (e in r["missing_extras"]) for e in r["extras"]) or "-"

    out = terminal_console()
    # Rich lays the columns out at the terminal's width: names, variants and ranges stay whole
    # and aligned, and a long "needs" wraps between its extras, under its own column.
    table = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 2, 0, 0), header_style="",
                  highlight=False)
    for head in ("name", "variant", "range"):
        table.add_column(head, no_wrap=True)
    table.add_column("needs", overflow="fold")
    for r in rows:
        table.add_row(literal(r["name"]), literal(r["variant"]), literal(_range_text(r["range"])), literal(needs(r)))
    with out.capture() as shown:
        out.print(table)
    typer.echo("\n".join(line.rstrip() for line in shown.get().splitlines()))  # no padding after the last column
    lower = [r["name"] for r in rows if not r["higher_is_better"]]
    say(out, f"{len(rows)} outputs; higher is better" + (f" except for {', '.join(lower)}" if lower else "") + ".")
    say(out, "Descriptions and families: capeval metrics --json; docs/METRICS.md.")
    if lacking:
        say(out, f"* not installed: extras {', '.join(lacking)}. Install them with:")
        say(out, f"  {install_command(lacking)}", soft_wrap=True)  # never wrapped: it pastes as one line


def register(app: typer.Typer) -> None:
    app.command("score")(score_cmd)
    app.command("metrics")(metrics_cmd)
