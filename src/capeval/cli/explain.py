"""``capeval explain``: the question/answer table behind a caption's QACE score."""
from __future__ import annotations

import json

import typer
from rich.console import Console

from ..errors import CapevalError
from ._console import error, say

console = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True)


def explain_cmd(
    candidate: str = typer.Option(..., "--candidate", "-c", help="The caption to explain."),
    references: list[str] = typer.Option(..., "--references", "-r", help="Reference captions (repeat the option, or give several after one --references)."),
    metric: str = typer.Option("qace_ref", "--metric", "-m", help="An explaining metric (qace_ref)."),
    option: list[str] = typer.Option([], "--option", "-O", help="Metric option FAMILY.KEY=VALUE (e.g. qace_ref.reduction=max)."),
    as_json: bool = typer.Option(False, "--json", help="Print the explanation as JSON."),
) -> None:
    """Print the questions asked about a caption, the answers each reference gives, and the scores."""
    from ..api import score
    from .score import parse_options

    try:
        result = score([candidate], [list(references)], [metric], options=parse_options(option))
    except CapevalError as e:
        error(err, e)
        raise typer.Exit(2) from None
    exps = result.explanations
    family = next(iter(exps), None)
    if family is None:
        error(err, f"metric {metric!r} gives no explanations")
        raise typer.Exit(2)
    exp = exps[family][0]
    if as_json:
        say(console, json.dumps({"explanation": exp.to_dict(), "signature": result.signatures[metric]}, indent=2))
        return
    console.print(exp.table(), markup=False)
    console.print(f"signature: {result.signatures[metric]}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("explain")(explain_cmd)
