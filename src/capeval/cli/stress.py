"""``capeval stress SOURCE -m METRICS``: which perturbations each metric notices (docs/STRESS.md)."""
from __future__ import annotations

import json
from pathlib import Path

import typer

from ..errors import CapevalError
from ._console import error, escape, say, terminal_console


def stress_cmd(
    source: str | None = typer.Argument(None, help="Human captions to perturb: coco, flickr30k (Karpathy test) or "
                                        "flickr8k (test split); coco-paragraph (ten-sentence paragraphs of COCO "
                                        "captions); omit with --input."),
    metrics: str | None = typer.Option(None, "--metrics", "-m", help="Comma-separated metric output names "
                                       "(see `capeval metrics`), plug-ins included."),
    input_file: Path | None = typer.Option(None, "--input", help="Your own rows instead of SOURCE: JSONL "
                                           "{\"id\", \"candidate\", \"references\", \"image\"?} or CSV, as "
                                           "`capeval score` reads."),
    scores: list[str] = typer.Option([], "--scores", help="NAME=FILE, repeatable: your metric's scores of the "
                                     "units --export writes (JSONL {\"id\", \"score\"} or CSV id,score; higher "
                                     "is better), as in `capeval bench`."),
    n: int | None = typer.Option(None, "--n", help="Use the first N items (images of SOURCE, rows of --input)."),
    seed: int = typer.Option(12345, "--seed", help="Seed of the candidate choice, the perturbations and the "
                             "bootstrap."),
    perturbations: str | None = typer.Option(None, "--perturbations", "-p", help="Comma-separated subset of the "
                                             "perturbations (default: the caption set, or the paragraph set for coco-paragraph)."),
    json_out: Path | None = typer.Option(None, "--json", help="Write results (JSON) here."),
    markdown_out: Path | None = typer.Option(None, "--markdown", help="Write the Markdown tables here."),
    report_out: Path | None = typer.Option(None, "--report", help="Write a self-contained HTML report with a "
                                           "metric x perturbation heatmap here."),
    export: Path | None = typer.Option(None, "--export", help="Write every control and perturbed unit (JSONL with "
                                       "ids) here, for a scores file to be made from."),
    images: Path | None = typer.Option(None, "--images", help="Directory holding the items' images (searched "
                                       "recursively by file name), for metrics that read images."),
    option: list[str] = typer.Option([], "--option", "-O", help="Metric option FAMILY.KEY=VALUE, repeatable."),
    root: Path | None = typer.Option(None, "--root", help="Data directory (default $CAPEVAL_DATA)."),
    tokenizer: str = typer.Option("ptb", "--tokenizer", help="ptb | ptb-java | none."),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Bootstrap resamples of the CIs."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No console table."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace existing output files (refused by default)."),
) -> None:
    """Perturb captions (object swap, negation, shuffle, synonym, ...) and report, per metric and
    perturbation, how often the metric moved the way a good metric should."""
    from rich.console import Console

    from ..outputs import check_outputs

    err = Console(stderr=True)
    try:
        outs = [p for p in (json_out, markdown_out, report_out, export) if p is not None]
        score_paths = [Path(item.partition("=")[2]) for item in scores if "=" in item]
        check_outputs(outs, inputs=[input_file, *score_paths], overwrite=overwrite)
        from .score import parse_options

        score_files = _check_args(source, input_file, metrics, scores, export)
        from ..progress import noting
        from ..stress import stress

        with err.status("stress …") as status, noting(lambda msg: status.update(escape(msg))):
            res = stress(source, metrics.split(",") if metrics else None, input=input_file,
                         scores=score_files or None, n=n, seed=seed, perturbations=perturbations,
                         images_dir=images, root=root, options=parse_options(option) or None, tokenizer=tokenizer,
                         n_resamples=bootstrap, export=export, progress=lambda msg: status.update(escape(msg)))
        if export is not None:
            say(err, f"wrote the units to {export}", style="dim")
        if not res.metrics:
            return
        if not quiet:
            from ..stress.report import print_rich

            print_rich(res, terminal_console())
        say(err, f"stress: {len(res.items)} items scored in {res.seconds:.1f} s", style="dim")
        _write_outputs(res, json_out, markdown_out, report_out)
    except (CapevalError, OSError) as e:  # OSError: an unwritable cache or disk, named by the message
        error(err, e)
        raise typer.Exit(2) from None


def _check_args(source, input_file, metrics, scores: list[str], export) -> dict[str, str]:
    """The --scores files; refuses a command that names no source or nothing to do."""
    from ..errors import InputError
    from .bench import parse_scores

    score_files = parse_scores(scores)
    if source is not None and input_file is not None:
        raise InputError("give SOURCE or --input, not both")
    if metrics is None and not score_files and export is None:
        raise InputError("name the metrics to stress with -m (e.g. -m bleu4,cider_d,spice), or --scores, "
                         "or --export the units")
    return score_files


def _write_outputs(res, json_out, markdown_out, report_out) -> None:
    from ..outputs import atomic_write
    from ..stress.report import to_markdown, write_html

    if json_out is not None:
        atomic_write(json_out, json.dumps(res.to_json(), indent=1, ensure_ascii=False) + "\n")
    if markdown_out is not None:
        atomic_write(markdown_out, to_markdown(res))
    if report_out is not None:
        write_html(res, report_out)


def register(app: typer.Typer) -> None:
    app.command("stress")(stress_cmd)
