"""``capeval bench <name|all>``: meta-evaluate metrics on the human-judgment benchmarks."""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path

import typer

from ..errors import CapevalError
from ..metrics.registry import METRIC_SETS
from ._console import error, escape, say, terminal_console


def bench_cmd(
    name: str | None = typer.Argument(None, help="Benchmark name (flickr8k-expert, composite, pascal50s, thumb, ...; "
                                      "`capeval data list`), a comma list, 'all', 'modern'; none with --file."),
    judgment_files: list[Path] = typer.Option([], "--file", help="Your own judgments (.jsonl .csv .tsv .parquet), "
                                              "repeatable: ratings, pairwise or systems (docs/DATA_FORMATS.md)."),
    judgment_kind: str | None = typer.Option(None, "--kind", help="ratings|pairwise|systems (default: from fields)."),
    metrics: str | None = typer.Option(None, "--metrics", "-m", help="Comma-separated metric output names (see "
                                       "`capeval metrics`); default "
                                       f"{','.join(METRIC_SETS['ngram'])}, or none when --scores is given."),
    scores: list[str] = typer.Option([], "--scores", help="NAME=FILE, repeatable: your own metric's scores of the "
                                     "units `capeval data export NAME` writes (JSONL {\"id\", \"score\"} or CSV id,"
                                     "score; higher is better), as column NAME; its signature holds the file's SHA-256."),
    images: Path | None = typer.Option(None, "--images", help="Folder of the images (searched by file name), if read."),
    json_out: Path | None = typer.Option(None, "--json", help="Write results (stable JSON contract) here."),
    markdown_out: Path | None = typer.Option(None, "--markdown", help="Write Markdown tables here."),
    latex_out: Path | None = typer.Option(None, "--latex", help="Write LaTeX tables here."),
    report_out: Path | None = typer.Option(None, "--report", help="Write a self-contained HTML report (tables, "
                                           "figures, signatures; no scripts or external URLs) here."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Score cache (default $CAPEVAL_CACHE or ~/.cache/capeval)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Neither read nor write cached scores."),
    statistic: str | None = typer.Option(None, "--statistic", help="Headline statistic for correlation benchmarks "
                                         "(kendall_tau_c, kendall_tau_b, pearson, spearman, r2); default: the "
                                         "benchmark's published one."),
    tie_policy: str = typer.Option("half", "--tie-policy", help="Metric ties in pairwise benchmarks: half "
                                   "(0.5 credit), random (seeded), b (Polos: tie counts as B), fail (no credit)."),
    seed: int = typer.Option(12345, "--seed", help="Seed for random tie breaking and the bootstrap."),
    bootstrap: int = typer.Option(0, "--bootstrap", help="Add a percentile 95% CI from this many row resamples (e.g. 1000)."),
    tokenizer: str = typer.Option("ptb", "--tokenizer", help="ptb | ptb-java | none."),
    aggregate: str = typer.Option("corpus", "--aggregate", help="System benchmarks: corpus score per system, "
                                  "or mean of per-caption scores."),
    data_option: list[str] = typer.Option([], "--data-option", "-D", help="Loader option KEY=VALUE, repeatable "
                                          "(e.g. -D protocol=elliott-keller for flickr8k-expert, -D labels=... for "
                                          "pascal50s); it changes the table, so it lands in the signature."),
    root: Path | None = typer.Option(None, "--root", help="Data directory (default $CAPEVAL_DATA)."),
    option: list[str] = typer.Option([], "--option", "-O", help="Metric option FAMILY.KEY=VALUE, repeatable, as in "
                                     "`capeval score` (e.g. -O wmd.vectors=spacy-md, -O nneval.model=my.npz); it "
                                     "is part of the metric's signature and of the cache key."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No console tables."),
    allow_seen: bool = typer.Option(False, "--allow-seen", help="Report learned metrics (learned, nneval) "
                                    "on benchmarks their model was trained or selected on, marked 'seen' "
                                    "in the table and signature (refused by default)."),
    allow_modified_data: bool = typer.Option(False, "--allow-modified-data", help="Run on data files that "
                                             "differ from capeval's packaged checksums (refused by default); "
                                             "the benchmark signature then says data:modified."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace existing --json/--markdown/--latex/--report files (refused by default)."),
    mkdirs: bool = typer.Option(False, "--mkdirs", help="Create missing folders of the output paths (refused by default: a mistyped path must not create folders)."),
    strict_line_breaks: bool = typer.Option(False, "--strict-line-breaks", help="Refuse a benchmark whose captions "
                                            "hold a line break (\\n, \\r, U+2028, ...) instead of reading each as a "
                                            "space (default, as `capeval score` does; the signature counts them)."),
    judge_url: str | None = typer.Option(None, "--judge-url", help="Model judges (clair, fleur, reffleur, pairjudge): base URL of an OpenAI-compatible endpoint (docs/JUDGES.md). Without it, --judge-model is a local transformers directory."),
    judge_model: str | None = typer.Option(None, "--judge-model", help="Model judges: the endpoint's model name, or a local model directory."),
    judge_allow_unanswered: int | None = typer.Option(None, "--judge-allow-unanswered", min=0, help="Model judges: rows (pairjudge: pairs) the judge may leave unanswered, left out and counted in the signature, before the run fails (default 0)."),
) -> None:
    """Score metrics on benchmarks and report correlations / accuracies with signatures."""
    from rich.console import Console

    from ..metaeval.runner import resolve_names
    from ..metaeval.tables import print_rich
    from ..service.cache import ScoreCache
    err = Console(stderr=True)
    load_options = _load_options(err, data_option)
    names = resolve_names(name) if name is not None else []
    outputs = [p for p in (json_out, markdown_out, latex_out, report_out) if p is not None]
    with _exit_on_error(err):
        # before any work (a run that cannot finish does none); its plan serves every benchmark
        plan = check_run(names, outputs=outputs, overwrite=overwrite, report=report_out is not None, root=root,
                         allow_modified_data=allow_modified_data, mkdirs=mkdirs, tokenizer=tokenizer,
                         files=judgment_files, kind=judgment_kind, **_metric_request(metrics, option, scores),
                         judge=(judge_url, judge_model, judge_allow_unanswered))
    cache = ScoreCache(cache_dir, enabled=not no_cache)
    run_options = dict(root=root, cache=cache, statistic=statistic, tie_policy=tie_policy, seed=seed,
                       bootstrap=bootstrap, aggregate=aggregate, load_options=load_options,
                       allow_seen=allow_seen, allow_modified_data=allow_modified_data, images_dir=images,
                       line_breaks="refuse" if strict_line_breaks else "space", file_kind=judgment_kind)
    with _exit_on_error(err):
        results = _run_benchmarks(err, names, plan, run_options, judgment_files)
    if not quiet:
        print_rich(results, terminal_console())  # Rich wraps at the terminal's width, never past it
    with _exit_on_error(err):
        _write_outputs(results, json_out, markdown_out, latex_out, report_out)


def _metric_request(metrics: str | None, option: list[str], scores: list[str]) -> dict:
    """The metric names (default: the n-gram set, or none beside --scores), their options and
    the scores files, as :func:`check_run`'s keywords."""
    from .score import parse_options

    score_files = parse_scores(scores)
    names = [m.strip() for m in metrics.split(",") if m.strip()] if metrics is not None else \
        [] if score_files else list(METRIC_SETS["ngram"])
    return dict(metric_names=names, options=parse_options(option) or None, scores=score_files or None)


def check_run(names: list[str], metric_names: list[str], outputs: list[Path], *, overwrite: bool, report: bool,
              root: Path | None, allow_modified_data: bool, mkdirs: bool = False, tokenizer: str = "ptb",
              options: dict | None = None, scores: dict | None = None, files: list[Path] = (), kind: str | None = None,
              judge: tuple = (None, None, None)):
    """Everything a run needs that can be known before scoring, every problem named at once
    (one :class:`~capeval.errors.InputError`): the benchmarks and their data root and files, the
    metrics (with their options and scores files) and the extras they and the report import,
    and outputs that can be written. Returns the run's :class:`~capeval.plan.ScoringPlan`, with
    ``judge`` (the --judge-url, --judge-model and --judge-allow-unanswered values) as the model
    judges' options."""
    from ..data.integrity import check_benchmark_data
    from ..data.registry import get_spec
    from ..errors import InputError, OutputError
    from ..extras import require
    from ..metaeval.runner import plan_for
    from ..outputs import check_outputs
    from .score import with_judge

    problems: list[str] = []

    def note(e: CapevalError) -> None:
        text = e.args[0] if isinstance(e, KeyError) and e.args else str(e)  # KeyError's str() quotes
        if text not in problems:
            problems.append(text)

    try:
        _check_sources(names, list(files), kind)
    except CapevalError as e:
        note(e)
    for n in names:
        try:
            get_spec(n)
            check_benchmark_data(n, root, allow_modified=allow_modified_data)
        except CapevalError as e:
            note(e)
    plan = None
    try:
        plan = with_judge(plan_for(metric_names, tokenizer=tokenizer, options=options, scores=scores), *judge)
    except CapevalError as e:
        note(e)
    needs = _metric_extras(plan, metric_names, note)
    if report:
        needs["--report (its figures)"] = ("report",)
    try:
        require(needs)  # one message and one install command for every missing extra
    except CapevalError as e:
        note(e)
    try:
        check_outputs(outputs, overwrite=overwrite, mkdirs=mkdirs, mkdirs_flag="--mkdirs")
    except OutputError as e:
        note(e)
    for p in outputs:
        folder = next((a for a in Path(p).absolute().parents if a.exists()), None)
        if folder is not None and not os.access(folder, os.W_OK | os.X_OK):
            note(OutputError(f"cannot write {p}: {folder} is not writable"))
    if len(problems) == 1:
        raise InputError(problems[0])
    if problems:
        raise InputError(f"this run cannot complete; nothing was scored or written ({len(problems)} problems):\n"
                         + "\n".join(f"- {p}" for p in problems))
    return plan


def _metric_extras(plan, metric_names: list[str], note) -> dict[str, tuple[str, ...]]:
    """Metric name -> the extras it needs, from the plan; when the plan could not be built, the
    names are resolved one by one so that every unknown one is named with the rest."""
    from ..metrics.registry import family_for

    needs: dict[str, tuple[str, ...]] = {}
    for m in plan.metrics if plan is not None else dict.fromkeys(x.strip() for x in metric_names if x.strip()):
        try:
            extras = plan.family_of(m).extras if plan is not None else family_for(m).extras
        except CapevalError as e:
            note(e)
            continue
        if extras:
            needs.setdefault(m, extras)
    return needs


@contextmanager
def _exit_on_error(err):
    """A capeval error is printed (escaped) and the command exits with status 2."""
    try:
        yield
    except CapevalError as e:
        error(err, e)
        raise typer.Exit(2) from None


def _load_options(err, items: list[str]) -> dict[str, str]:
    """``--data-option KEY=VALUE`` items as the loader's keyword arguments."""
    load_options = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            error(err, f"--data-option expects KEY=VALUE, got {item!r}")
            raise typer.Exit(2)
        load_options[key.strip()] = value.strip()
    return load_options


def _check_sources(names: list[str], files: list[Path], kind: str | None) -> None:
    from ..data.judgment_files import KINDS
    from ..errors import InputError

    if not names and not files:
        raise InputError("name a benchmark (capeval data list shows them) or give your judgments with --file")
    if kind is not None and kind not in KINDS:
        raise InputError(f"unknown --kind {kind!r}; choose one of {', '.join(KINDS)}")
    if kind is not None and not files:
        raise InputError("--kind is the kind of a --file; no --file was given")


def _run_benchmarks(err, names: list[str], plan, run_options: dict, files: list[Path] = ()) -> list:
    """Each benchmark's result (all scored with the one ``plan``), with the status line
    following its steps; then each judgment file's."""
    from ..metaeval.runner import run_benchmark
    from ..progress import noting

    sources: list[tuple[str | None, Path | None, str]] = [(n, None, n) for n in names]
    sources += [(None, f, str(f)) for f in files]
    if plan.columns and len(sources) > 1:
        from ..errors import InputError

        raise InputError(f"--scores holds the units of one benchmark; run {', '.join(s[2] for s in sources)} "
                         "one at a time")
    results = []
    for n, file, label in sources:
        # one-time steps (METEOR's conversion) say what they do in the status line
        with err.status(escape(f"{label} …")) as status, noting(lambda msg: status.update(escape(msg))):
            res = run_benchmark(n, plan=plan, progress=lambda msg: status.update(escape(msg)), file=file,
                                **run_options)
        results.append(res)
        hit = sum(res.cached.values())
        say(err, f"{res.name}: {res.seconds:.2f}s, {hit}/{len(res.cached)} metrics from cache", style="dim")
    return results


def _write_outputs(results, json_out, markdown_out, latex_out, report_out) -> None:
    """Every output built first, then written: a failure (a figure, a full disk) leaves none of
    this run's files, and a file it replaced (--overwrite) is already the new one or still the old."""
    from ..metaeval.tables import results_to_json, to_latex, to_markdown
    from ..outputs import atomic_write

    texts: dict[Path, str] = {}
    if json_out is not None:
        texts[json_out] = json.dumps(results_to_json(results), indent=1, ensure_ascii=False) + "\n"
    if markdown_out is not None:
        texts[markdown_out] = to_markdown(results)
    if latex_out is not None:
        texts[latex_out] = to_latex(results)
    if report_out is not None:
        from ..metaeval.report import build_report

        texts[report_out] = build_report(results)
    new = [p for p in texts if not os.path.lexists(p)]
    written: list[Path] = []
    try:
        for path, text in texts.items():
            atomic_write(path, text)
            written.append(path)
    except BaseException:
        for path in written:
            if path in new:
                path.unlink(missing_ok=True)
        raise


def parse_scores(items: list[str]) -> dict[str, str]:
    """``--scores NAME=FILE`` items as ``{NAME: FILE}`` (bench and stress)."""
    from ..errors import InputError

    out: dict[str, str] = {}
    for item in items:
        col, sep, path = item.partition("=")
        if not sep or not col.strip() or not path.strip():
            raise InputError(f"--scores {item!r}: expected NAME=FILE (e.g. mymetric=scored.jsonl)")
        if col.strip() in out:
            raise InputError(f"--scores: column {col.strip()!r} given twice")
        out[col.strip()] = path.strip()
    return out


def combine_cmd(
    name: str = typer.Argument(..., help="A correlation benchmark (flickr8k-expert, flickr8k-cf, composite, ...)."),
    metrics: str = typer.Option(..., "--metrics", "-m", help="Metrics to combine, e.g. wmd,spice,meteor,cider_d."),
    sizes: str = typer.Option("2,3", "--sizes", help="Combination sizes."),
    norm: str = typer.Option("z", "--norm", help="z (z-scores) or minmax."),
    statistic: str | None = typer.Option(None, "--statistic", help="Ranking statistic (default: the benchmark's)."),
    df: str = typer.Option("n-3", "--df", help="Williams df rule: n-3 (psych) or n-2 (2014 README)."),
    top: int = typer.Option(10, "--top", help="Combinations to print."),
    json_out: Path | None = typer.Option(None, "--json", help="Write all results here."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir"),
    no_cache: bool = typer.Option(False, "--no-cache"),
    tokenizer: str = typer.Option("ptb", "--tokenizer"),
    root: Path | None = typer.Option(None, "--root"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --json file."),
    mkdirs: bool = typer.Option(False, "--mkdirs", help="Create the missing folders of --json (refused by default)."),
) -> None:
    """Search normalised sums of 2–3 metrics; Williams-test each against the best single metric."""
    from rich.console import Console
    from rich.markdown import Markdown

    from ..service.cache import ScoreCache
    from ..metaeval.combination import run_combination
    from ..metaeval.tables import combination_markdown, combination_to_json

    from ..outputs import atomic_write, check_outputs

    err = Console(stderr=True)
    try:
        check_outputs([json_out] if json_out is not None else [], overwrite=overwrite, mkdirs=mkdirs,
                      mkdirs_flag="--mkdirs")
        size_list = [int(x) for x in sizes.split(",") if x.strip()]
        run = run_combination(name, metrics.split(","), sizes=size_list, method=norm, statistic=statistic, df=df,
                              root=root, cache=ScoreCache(cache_dir, enabled=not no_cache), tokenizer=tokenizer)
    except ValueError as e:  # InputError is a ValueError; so is a bad --sizes
        error(err, e)
        raise typer.Exit(2) from None
    except CapevalError as e:
        error(err, e)
        raise typer.Exit(2) from None
    Console().print(Markdown(combination_markdown(run, top=top)))
    if json_out is not None:
        try:
            atomic_write(json_out, json.dumps(combination_to_json(run), indent=1) + "\n")
        except CapevalError as e:
            error(err, e)
            raise typer.Exit(2) from None


def register(app: typer.Typer) -> None:
    app.command("bench")(bench_cmd)
    app.command("combine")(combine_cmd)
