"""The ``lwm`` command: one module per subcommand, gathered here."""

from __future__ import annotations

import os
import sys
from typing import Any

import typer
import typer.main

if "COLUMNS" not in os.environ and not sys.stdout.isatty():
    # Piped (`lwm models | cat`) the terminal is still stderr's or stdin's: its width. With no terminal at all
    # (CI, a file), 160: rich would cut every table at 80 columns ("factu…"). Set before any Console exists.
    os.environ["COLUMNS"] = next((str(os.get_terminal_size(s.fileno()).columns) for s in (sys.stderr, sys.stdin)
                                  if s is not None and s.isatty()), "160")

from lwm import __version__
from lwm.cli import agent, bench, collect, data, demo, models, serve, setup, shell, simulate, testserver, train

app = typer.Typer(name="lwm", help="Language world models: simulate an agent's environment with an LLM.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]})
for module in (demo, simulate, shell, models, setup, collect, data, bench, train, agent, serve, testserver):
    module.register(app)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"lwm {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print lwm's version and exit.")) -> None:
    """Language world models: simulate an agent's environment with an LLM."""


_PLAIN_TYPES = {"str": "TEXT", "int": "N", "float": "NUMBER", "path": "PATH"}


def plain_help(command: Any, inherited: dict[str, Any] | None = None) -> Any:
    """Help that reads like a person wrote it: a flag shows no ``<bool>``, a value its kind in capitals
    (``PATH``, ``N``; a repeatable one ``PATH…``) instead of ``<list[Path]>``, and an on/off pair its default as
    ``on`` or ``off`` rather than ``no-compact``. Applied to the whole (typer's own click) command tree once,
    before it runs."""
    settings = {**(inherited or {}), **command.context_settings}  # -h as well as --help, as the root says
    help_option = command.get_help_option(command.context_class(command, **settings))  # click keeps it
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        if getattr(param, "param_type_name", "") != "option" or param.metavar is not None:
            continue
        if param.is_flag:
            param.metavar = ""
            if param.secondary_opts and isinstance(param.default, bool) and param.show_default is not False:
                param.show_default = "on" if param.default else "off"
            continue
        shown = param.display_type(command.context_class(command)) if hasattr(param, "display_type") else None
        if isinstance(shown, str):
            bare = shown.strip("<>")
            many = bare.startswith("list[")
            bare = bare.removeprefix("list[").removesuffix("]")
            if "|" not in bare:  # a choice keeps its values
                param.metavar = _PLAIN_TYPES.get(bare.lower(), bare.upper()) + ("…" if many else "")
    for sub in getattr(command, "commands", {}).values():
        plain_help(sub, settings)
    return command


def main() -> None:
    """The command, every error in one style — ``lwm: error: ...``, exit 2 — whether an option is wrong (click's
    usage errors, which typer would box) or a folder is given where a file belongs (wherever it surfaces)."""
    from typer.exceptions import TyperException  # typer's own click: its usage errors derive from this

    try:
        code = plain_help(typer.main.get_command(app))(standalone_mode=False)
    except TyperException as exc:
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError":  # `lwm bench` alone: its help, as before
            typer.echo(ctx.get_help() if ctx else str(exc))
            raise SystemExit(0) from None
        usage = getattr(exc, "exit_code", 1) == 2 and ctx is not None
        typer.echo(f"lwm: error: {exc.format_message()}"  # type: ignore[attr-defined]
                   + (f" (see: {ctx.command_path} --help)" if usage else ""), err=True)
        raise SystemExit(getattr(exc, "exit_code", 1)) from None
    except typer.Abort:
        typer.echo("lwm: interrupted", err=True)
        raise SystemExit(130) from None
    except (IsADirectoryError, NotADirectoryError, FileExistsError) as exc:  # FileExistsError: mkdir on a file
        what = "is a folder where a file belongs" if isinstance(exc, IsADirectoryError) else \
            "is a file where a folder belongs" if isinstance(exc, FileExistsError) else \
            "a part of this path is a file where a folder belongs"
        typer.echo(f"lwm: error: {exc.filename}: {what}", err=True)
        raise SystemExit(2) from None
    raise SystemExit(code if isinstance(code, int) else 0)
