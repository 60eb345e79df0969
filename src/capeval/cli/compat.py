"""``capeval compat convert-cider-df``: the ruotianluo/cider fork's df pickle as a capeval df file."""
from __future__ import annotations

import json
from pathlib import Path

import typer

compat_app = typer.Typer(help="Drop-in helpers for code written against other tools (pycocoevalcap, the "
                         "ruotianluo/cider fork).", no_args_is_help=True)


@compat_app.command("convert-cider-df")
def convert_cider_df(
    src: Path = typer.Argument(..., help="The fork's df pickle (data/<name>.p: {'document_frequency': "
                               "{n-gram tuple: count}, 'ref_len': N})."),
    dest: Path = typer.Argument(..., help="The capeval df file to write (JSON, capeval-cider-df/1)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace DEST if it exists."),
    mkdirs: bool = typer.Option(False, "--mkdirs", help="Create DEST's missing folders (refused by default)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable summary."),
) -> None:
    """Read the pickle without running it (only dicts, tuples, strings and numbers, and
    defaultdict(float), are accepted) and write it as a df file that
    capeval.compat.ciderD.CiderD(df=...), capeval.CiderDReward and --cider-df read."""
    from capeval.compat.fork_df import convert_fork_df
    from capeval.errors import CapevalError
    from capeval.outputs import check_outputs

    try:
        check_outputs([dest], [src], overwrite=overwrite, mkdirs=mkdirs, mkdirs_flag="--mkdirs")
        summary = convert_fork_df(src, dest)
    except CapevalError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps({"source": str(src), "output": str(dest), **summary}, indent=1))
        return
    typer.echo(f"wrote {dest}: {summary['ngrams']} n-grams over {summary['n_units']} reference sets "
               f"(sha256 {summary['sha256'][:16]})")
    if summary["skipped"]:
        typer.echo(f"left out {summary['skipped']} n-grams no caption can produce (empty, words with whitespace, "
                   "or more than 4 words): the fork never looks them up, so no score changes")


def register(app: typer.Typer) -> None:
    app.add_typer(compat_app, name="compat")
