"""Entry point: ``capeval <command>``.

Each module in ``capeval.cli`` that defines ``register(app)`` adds its commands; this file
only assembles them, so commands live next to nothing but argument parsing.
"""
from __future__ import annotations

import importlib
import pkgutil

import typer
import typer.core


class _Argument(typer.core.TyperArgument):
    def _usage_display_name(self) -> str:
        # Typer writes a required argument as {name}; usage lines say NAME (optional: [NAME]).
        name = self.metavar or self.name.upper()
        return (name if self.required else f"[{name}]") + ("..." if self.nargs != 1 else "")


def _name_arguments(command) -> None:
    """Every argument of ``command`` and its subcommands shown as NAME, in the usage line, the
    help and the errors ("Missing argument 'NAME'")."""
    for param in getattr(command, "params", ()):
        if isinstance(param, typer.core.TyperArgument):
            param.metavar = (param.metavar or param.name).strip("[]").upper()
            param.__class__ = _Argument
    for sub in getattr(command, "commands", {}).values():
        _name_arguments(sub)


class _Capeval(typer.core.TyperGroup):
    """The ``capeval`` group; built after its subcommands, so it can name their arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _name_arguments(self)


app = typer.Typer(
    name="capeval",
    cls=_Capeval,
    help="Image-caption metrics (exact coco numbers, fast, offline) and meta-evaluation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Help text is printed as written: "[ray]" (an extra) or a user's "[b]" is not Rich markup.
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        from capeval._version import __version__

        typer.echo(f"capeval {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print capeval's version and exit."),
) -> None:
    """Image-caption metrics (exact coco numbers, fast, offline) and meta-evaluation."""


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
