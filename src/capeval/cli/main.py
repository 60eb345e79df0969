"""Entry point: ``capeval <command>``.

Each module in ``capeval.cli`` that defines ``register(app)`` adds its commands; this file
only assembles them, so commands live next to nothing but argument parsing.
"""
from __future__ import annotations

import importlib
import pkgutil

import typer

app = typer.Typer(
    name="capeval",
    help="Image-caption metrics (exact coco numbers, fast, offline) and meta-evaluation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Help text is printed as written: "capeval[ray]" is an extra, not Rich markup.
    rich_markup_mode=None,
)


def _load_commands() -> None:
    import capeval.cli as pkg

    for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if mod.name in {"main"} or mod.name.startswith("_"):
            continue
        module = importlib.import_module(f"capeval.cli.{mod.name}")
        reg = getattr(module, "register", None)
        if reg is not None:
            reg(app)


_load_commands()


def main() -> None:
    import capeval._process

    # This process runs nothing but capeval (a user's program imports capeval, not this).
    capeval._process.owns_interpreter = True
    app()


if __name__ == "__main__":
    main()
