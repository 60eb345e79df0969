"""Entry point: ``capeval <command>``.

Each module in ``capeval.cli`` that defines ``register(app)`` adds its commands; this file
only assembles them, so commands live next to nothing but argument parsing.
"""
from __future__ import annotations

import importlib
import pkgutil

import typer
import typer.core

try:  # typer >= 0.25 carries its own copy of click
    from typer._click.exceptions import NoSuchOption
except ImportError:  # pragma: no cover - older typer runs on click itself
    from click.exceptions import NoSuchOption  # type: ignore[no-redef,assignment]


def _parse_suggesting(command, parse, ctx, args: list[str]) -> list[str]:
    """``parse(ctx, args)``, where a mistyped option gets "Did you mean --metrics?" whatever its
    case or ``_`` for ``-`` (``--metric``, ``--Metrics``, ``--cider_df``), and a long option
    written with one dash (``-metrics``, which would read as ``-m etrics``) is refused naming
    the two-dash one."""
    opts = [o for p in command.get_params(ctx) for o in (*p.opts, *p.secondary_opts)]
    longs = [o for o in opts if o.startswith("--")]
    for arg in args:
        if arg == "--" or not arg.startswith("-"):
            if isinstance(command, typer.core.TyperGroup):  # the rest is a subcommand's
                break
            continue
        name = arg.partition("=")[0]
        if not name.startswith("--") and len(name) > 2 and "-" + name in longs:
            reads = f" (with one dash it reads as {name[:2]} {arg[2:]})" if name[:2] in opts else ""
            ctx.fail(f"No such option: {arg}. Did you mean -{arg}?{reads}")
    try:
        return parse(ctx, args)
    except NoSuchOption as e:
        from ..metrics.registry import did_you_mean

        hint = did_you_mean(e.option_name, longs) if e.option_name.startswith("--") else ""
        if not hint:
            raise
        raise NoSuchOption(e.option_name, message=f"No such option: {e.option_name}. D{hint[1:]}", ctx=e.ctx) from None


# Single inheritance: a built command's class is swapped for these (_name_arguments), which
# Python allows only between classes of the same layout.
class _Command(typer.core.TyperCommand):
    def parse_args(self, ctx, args: list[str]) -> list[str]:
        return _parse_suggesting(self, super().parse_args, ctx, args)


class _Group(typer.core.TyperGroup):
    def parse_args(self, ctx, args: list[str]) -> list[str]:
        return _parse_suggesting(self, super().parse_args, ctx, args)


class _Argument(typer.core.TyperArgument):
    def _usage_display_name(self) -> str:
        # Typer writes a required argument as {name}; usage lines say NAME (optional: [NAME]).
        name = self.metavar or self.name.upper()
        return (name if self.required else f"[{name}]") + ("..." if self.nargs != 1 else "")


def _name_arguments(command) -> None:
    """Every argument of ``command`` and its subcommands shown as NAME, in the usage line, the
    help and the errors ("Missing argument 'NAME'"); and every subcommand suggesting options
    (:func:`_parse_suggesting`)."""
    if type(command) is typer.core.TyperCommand:
        command.__class__ = _Command
    elif type(command) is typer.core.TyperGroup:
        command.__class__ = _Group
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

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        return _parse_suggesting(self, super().parse_args, ctx, args)


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
    from ._ending import run

    run(app)  # ends with the command's own status, whatever user code did (cli/_ending.py)


if __name__ == "__main__":
    main()
