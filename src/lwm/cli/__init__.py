"""The ``lwm`` command: one module per subcommand, gathered here."""

from __future__ import annotations

import os
import sys

import typer

if "COLUMNS" not in os.environ and not sys.stdout.isatty():
    # piped or in CI, rich would cut every table at 80 columns ("factu…"); set before any Console exists
    os.environ["COLUMNS"] = "160"

from lwm import __version__
from lwm.cli import agent, bench, collect, data, demo, models, serve, shell, simulate, testserver, train

app = typer.Typer(name="lwm", help="Language world models: simulate an agent's environment with an LLM.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]})
for module in (demo, simulate, shell, models, collect, data, bench, train, agent, serve, testserver):
    module.register(app)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"lwm {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print lwm's version and exit.")) -> None:
    """Language world models: simulate an agent's environment with an LLM."""


def main() -> None:
    """The command, with the file-system mistakes any command can meet (a folder given where a file belongs,
    or found inside a run or data folder) said in one line, exit 2, wherever they surface."""
    try:
        app()
    except (IsADirectoryError, NotADirectoryError) as exc:
        what = "is a folder where a file belongs" if isinstance(exc, IsADirectoryError) else \
            "a part of this path is a file where a folder belongs"
        typer.echo(f"lwm: error: {exc.filename}: {what}", err=True)
        raise SystemExit(2) from None
