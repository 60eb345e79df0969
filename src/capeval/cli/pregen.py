"""``capeval pregen score`` and ``capeval pregen analyse``."""
from __future__ import annotations

import csv
import json
import math
import warnings
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from ..errors import CapevalError
from ._console import error, literal, say

console = Console()
err = Console(stderr=True)


def _json_value(x: float):
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf" if x < 0 else None)


def score_cmd(
    probs: Path = typer.Option(..., "--probs", "-p", help="npz with probs, ranks, caption_lengths, captions_per_image (per-token teacher-forcing records)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write all values: .json (values + signature) or .csv (name, value, signature)."),
    metrics: Optional[str] = typer.Option(None, "--metrics", "-m", help="Comma-separated pre-gen names (default: all 504)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --output file (refused by default)."),
    mkdirs: bool = typer.Option(False, "--mkdirs", help="Create missing folders of the output paths (refused by default: a mistyped path must not create folders)."),
) -> None:
    """Compute the pre-gen metrics (Tanti et al. 2018) from per-token (probability, rank) arrays."""
    from ..pregen.signed_values import score
    from ..pregen.tiers import BEST
    from ..pregen.tokens import TokenScores

    from ..outputs import atomic_open, atomic_write, check_outputs

    try:
        check_outputs([output] if output is not None else [], [probs], overwrite=overwrite, mkdirs=mkdirs,
                      mkdirs_flag="--mkdirs")
        ts = TokenScores.load_npz(probs)
        names = [m.strip() for m in metrics.split(",") if m.strip()] if metrics else None
        result = score(ts, names)
    except CapevalError as e:
        error(err, e)
        raise typer.Exit(2) from None
    values, sig = result.values, result.signature
    shown = [BEST] if BEST in values and len(values) > 10 else list(values)
    table = Table(title=f"pre-gen — {ts.n_images} images, {ts.n_captions} reference captions")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name in shown:
        table.add_row(literal(name), f"{values[name]:.6g}")
    console.print(table)
    if len(shown) < len(values):
        say(console, f"({len(values)} values computed; write them with --output)")
    say(console, f"signature: {sig}", soft_wrap=True)
    if output is not None:
        try:
            if output.suffix.lower() == ".csv":
                with atomic_open(output, "w", newline="") as f:
                    w = csv.writer(f)
                    w.writerow(["metric", "value", "signature"])
                    for name, v in values.items():
                        w.writerow([name, repr(v), sig])
            else:
                payload = {
                    "signature": sig,
                    "n_images": ts.n_images,
                    "n_captions": ts.n_captions,
                    "values": {k: _json_value(v) for k, v in values.items()},
                }
                atomic_write(output, json.dumps(payload, indent=1))
        except CapevalError as e:
            error(err, e)
            raise typer.Exit(2) from None
        say(console, f"written to {output}")


def analyse_cmd(
    results: Path = typer.Argument(..., help="Results table like the reference data.txt (TAB-separated)."),
    out_dir: Optional[Path] = typer.Option(None, "--out-dir", "-o", help="Write correlations_<metric>.txt (reference layout) and summary.json here."),
    postgen: Optional[str] = typer.Option(None, "--postgen", help="Comma-separated post-gen columns (default: all)."),
    groups: Optional[str] = typer.Option(None, "--groups", help="Comma-separated groups (datasets and/or 'all'); default: each dataset then all."),
    top: int = typer.Option(5, "--top", "-k", help="Rows in the top-k table."),
    by: str = typer.Option("all", "--by", help="Group that ranks the top-k table."),
    plot: bool = typer.Option(False, "--plot", help="Scatter of the best column vs each post-gen metric (needs matplotlib and --out-dir)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace existing files in --out-dir (refused by default)."),
    mkdirs: bool = typer.Option(False, "--mkdirs", help="Create the missing folders above --out-dir (by default only "
                                "--out-dir itself is created: a mistyped path must not create folders)."),
) -> None:
    """R² of every pre-gen column against each post-gen metric, with the reference drop rule."""
    from ..pregen.analysis import correlate, scatter_plot, write_correlations
    from ..pregen.results import read_results

    try:
        table = read_results(results)
        metrics = [m.strip() for m in postgen.split(",")] if postgen else list(table.postgen)
        group_list = [g.strip() for g in groups.split(",")] if groups else None
        with warnings.catch_warnings():
            # Pearson's r warns on near-constant columns; the reference kept them, so do we.
            warnings.simplefilter("ignore")
            corrs = {m: correlate(table, m, group_list) for m in metrics}
        summary = {}
        for m, c in corrs.items():
            best = c.top(top, by)
            t = Table(title=literal(f"{m}: top {top} pre-gen columns by R² ({by}, n={c.n_rows[by]})"))
            t.add_column("pre-gen", overflow="fold")
            for g in c.groups:
                t.add_column(literal(f"{g} R²"), justify="right")
            for name, _ in best:
                t.add_row(literal(name), *[f"{c.rows[name][g].r2:.5f}" for g in c.groups])
            console.print(t)
            say(
                console,
                f"kept {len(c.rows)} of {len(table.pregen)} columns (dropped {len(c.dropped)}: inf or "
                f"constant in a group)\nsignature: {c.signature()}",
                soft_wrap=True,
            )
            summary[m] = {
                "signature": c.signature(),
                "kept": len(c.rows),
                "dropped": c.dropped,
                "top": [{"pregen": n, **{g: vars(c.rows[n][g]) for g in c.groups}} for n, _ in best],
            }
        if out_dir is not None:
            from ..outputs import atomic_write, check_outputs

            files = [out_dir / f"correlations_{m}.txt" for m in corrs] + [out_dir / "summary.json"]
            files += [out_dir / f"scatter_{m}.png" for m in corrs] if plot else []
            check_outputs(files, [results], overwrite=overwrite, mkdirs=mkdirs, mkdirs_flag="--mkdirs",
                          out_dirs=[out_dir])
            out_dir.mkdir(parents=True, exist_ok=True)
            for m, c in corrs.items():
                write_correlations(out_dir / f"correlations_{m}.txt", c)
                if plot:
                    scatter_plot(table, c.top(1, by)[0][0], m, out_dir / f"scatter_{m}.png", c.groups)
            atomic_write(out_dir / "summary.json", json.dumps(summary, indent=1))
            say(console, f"written to {out_dir}")
        elif plot:
            raise CapevalError("--plot needs --out-dir")
    except CapevalError as e:
        error(err, e)
        raise typer.Exit(2) from None


def register(app: typer.Typer) -> None:
    sub = typer.Typer(help="Pre-gen metrics: score a model without generating captions.", no_args_is_help=True)
    sub.command("score")(score_cmd)
    sub.command("analyse")(analyse_cmd)
    app.add_typer(sub, name="pregen")
