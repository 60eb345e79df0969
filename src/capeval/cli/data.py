"""``capeval data list | verify | download``."""
from __future__ import annotations

import json
import os
from pathlib import Path

import typer

data_app = typer.Typer(help="Benchmark datasets: list, verify checksums, download (public origins or a mirror).",
                       no_args_is_help=True)

_ROOT = typer.Option(None, "--root", help="Data directory (default: $CAPEVAL_DATA or ../shared/data).")


def _root(root: Path | None) -> Path:
    from capeval.data._common import resolve_root

    with clean_errors():
        return resolve_root(root)


class clean_errors:
    """Print capeval errors as one line and exit 2, instead of a traceback."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        from capeval.errors import CapevalError

        if exc is not None and isinstance(exc, CapevalError):
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        return False


@data_app.command("list")
def list_cmd(
    root: Path | None = _ROOT,
    verify: bool = typer.Option(True, "--verify/--no-verify", help="Hash files against the packaged checksums."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Every known benchmark: present or missing (with the command that fetches it), rows,
    checksum status. Without any data root every benchmark is listed as missing."""
    from capeval.data import available
    from capeval.paths import data_root
    from capeval.signature import signature_line

    # No data at all is a state to report, not an error: list what exists and how to get it.
    base = _root(root) if root is not None or data_root() is not None else None
    with clean_errors():
        infos = available(base, verify=verify)

    def fetch(i) -> str | None:
        return None if i.present else f"capeval data download {i.name}"

    if as_json:
        rows = [dict(name=i.name, kind=i.kind, folder=i.folder, present=i.present, counts=i.counts,
                     checksum=i.checksum, signature=signature_line(i.name, **i.protocol) if i.protocol else None,
                     download=fetch(i))
                for i in infos]
        typer.echo(json.dumps(rows, indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    from ._console import literal, say

    console = Console(width=200)
    t = Table("name", "kind", "status", "rows", "checksum", "protocol / how to get it")
    for i in infos:
        t.add_row(*map(literal, (i.name, i.kind, "present" if i.present else "missing",
                                 str(i.counts.get("rows", "-")), i.checksum,
                                 signature_line(i.name, **i.protocol) if i.protocol else fetch(i) or "")))
    console.print(t)
    if base is None:
        from capeval.data._common import missing_root_reason

        say(console, f"no data root ({missing_root_reason()}): set CAPEVAL_DATA to the benchmark data directory "
                     "(default ../shared/data), or fetch it: capeval data download [NAME] --to DIR [--base-url URL] "
                     "(each file from its pinned public origin, or from a mirror with --base-url), then export "
                     "CAPEVAL_DATA=DIR.", soft_wrap=True)
    elif not all(i.present for i in infos):
        say(console, f"data root {base}; fetch a missing benchmark into it with: "
                     f"capeval data download NAME --to {base}", soft_wrap=True)


@data_app.command("verify")
def verify_cmd(
    name: str | None = typer.Argument(None, metavar="[NAME]", help="Benchmark or folder (default: every folder)."),
    root: Path | None = _ROOT,
    require: list[str] = typer.Option([], "--require", metavar="NAME", help="Benchmark or folder that must be "
                                      "present, repeatable: its absence then fails the check. A NAME given is "
                                      "required too; otherwise an absent folder (e.g. an optional benchmark "
                                      "such as thumb) is reported and passes."),
) -> None:
    """Hash every file against the checksums packaged with capeval (never a SHA256SUMS on disk).
    Exit 1 on a modified file, on a folder with only some of its files (an interrupted copy),
    or on an absent folder named by NAME or --require; an absent folder that was not asked for
    alone is not damage."""
    from capeval.data.checksums import check_folder
    from capeval.data.download import folders_for

    base = _root(root)
    failed = False
    with clean_errors():
        folders = folders_for(name)
        # Asking to verify one benchmark by name and getting exit 0 for a benchmark that is not
        # there would read as "verified": the named one must be present.
        required = {f for r in [*require, *([name] if name else [])] for f in folders_for(r)}
    for folder in dict.fromkeys([*folders, *sorted(required - set(folders))]):
        with clean_errors():
            c = check_folder(base, folder)
        absent = bool(c.missing) and not c.ok and not c.mismatch
        if absent:
            bad = folder in required
            typer.echo(f"{folder}: absent (none of its {len(c.missing)} files)"
                       + ("; required (named or --require)" if bad else "; not required, so not an error"))
        else:
            bad = c.status != "ok"
            typer.echo(f"{folder}: {c.status} ({len(c.ok)} ok, {len(c.missing)} missing, {len(c.mismatch)} "
                       f"mismatched; checked against "
                       f"{'the packaged checksums' if c.source == 'manifest' else 'nothing'})")
            for rel in c.mismatch:
                typer.echo(f"  MISMATCH {folder}/{rel}")
            for rel in c.missing:
                typer.echo(f"  missing  {folder}/{rel}")
        failed |= bad
    from capeval.data.download import stale_staging

    for d in stale_staging(base):
        size = sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
        typer.echo(f"leftover {d.name}: staging folder of an interrupted download ({size} bytes); the next "
                   f"`capeval data download` into {base} removes it, or delete it")
    raise typer.Exit(1 if failed else 0)


@data_app.command("download")
def download_cmd(
    name: str | None = typer.Argument(None, help="Benchmark or folder (default: everything)."),
    to: Path | None = typer.Option(None, "--to", help="Target directory (default: $CAPEVAL_DATA or ~/.cache/capeval/data)."),
    base_url: str | None = typer.Option(None, "--base-url", help="Mirror of the data layout: <url>/<folder>/<file> "
                                        "(default: $CAPEVAL_DATA_URL; unset: each file's pinned public GitHub origin)."),
    archive: str | None = typer.Option(None, "--archive", help="Fetch <url>/<folder><EXT> (e.g. .tar.gz) and extract."),
    force: bool = typer.Option(False, "--force", help="Re-fetch files that already verify (a verified copy is "
                               "replaced only by a download that verifies too)."),
) -> None:
    """Fetch benchmark files, verify SHA-256 against the packaged manifest, extract safely."""
    from capeval.data.download import download

    base_url = base_url or os.environ.get("CAPEVAL_DATA_URL") or None
    if base_url is None:
        typer.echo("no --base-url: fetching from each file's pinned public origin (GitHub)")
    target = to or Path(os.environ.get("CAPEVAL_DATA") or Path.home() / ".cache" / "capeval" / "data")
    with clean_errors():
        files = download(name, target, base_url, archive=archive, force=force, log=typer.echo)
    typer.echo(f"{len(files)} files verified under {target}. Use them with: export CAPEVAL_DATA={target}")


def _data_options(items: list[str]) -> dict[str, str]:
    from capeval.errors import InputError

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--data-option expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


_DATA_OPTION = typer.Option([], "--data-option", "-D", help="Loader option KEY=VALUE, repeatable, as in "
                            "`capeval bench` (it changes the table, hence the units).")


@data_app.command("export")
def export_cmd(
    name: str = typer.Argument(..., help="Benchmark name (see `capeval data list`)."),
    output: Path = typer.Option(..., "--output", "-o", help="JSONL file to write: one distinct unit per line."),
    root: Path | None = _ROOT,
    data_option: list[str] = _DATA_OPTION,
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output file."),
) -> None:
    """Write every distinct unit the benchmark scores ({"id", "candidate", "references", "image",
    "benchmark", "keys"} per line), to score with your own metric and bring back with
    `capeval bench NAME --scores COLUMN=scored.jsonl` ({"id", "score"} per line)."""
    from capeval.metaeval.units import export_units
    from capeval.outputs import check_outputs

    base = _root(root)
    with clean_errors():
        check_outputs([output], overwrite=overwrite)
        n = export_units(name, output, root=base, load_options=_data_options(data_option))
    typer.echo(f"{n} units of {name} written to {output}")


@data_app.command("images")
def images_cmd(
    name: str = typer.Argument(..., help="Benchmark name (see `capeval data list`)."),
    images: Path = typer.Option(..., "--images", help="Image directory (searched recursively by file name)."),
    root: Path | None = _ROOT,
    data_option: list[str] = _DATA_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """How many of the benchmark's images the directory holds; lists the missing ones. Exit 1
    when any is missing or a unit names no image."""
    from capeval.metaeval.units import check_images

    base = _root(root)
    with clean_errors():
        c = check_images(name, images, root=base, load_options=_data_options(data_option))
    if as_json:
        typer.echo(json.dumps({"benchmark": c.benchmark, "images": len(c.images), "found": len(c.found),
                               "missing": c.missing, "units_without_image": c.unnamed}, indent=1))
    else:
        typer.echo(f"{name}: {len(c.found)} of {len(c.images)} images found under {images}")
        if c.unnamed:
            typer.echo(f"{c.unnamed} units name no image (the loader does not record it)")
        if c.missing:
            typer.echo(f"missing ({len(c.missing)}):")
            for img in c.missing:
                typer.echo(f"  {img}")
    raise typer.Exit(1 if c.missing or c.unnamed else 0)


def register(app: typer.Typer) -> None:
    app.add_typer(data_app, name="data")
