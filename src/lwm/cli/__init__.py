"""The ``lwm`` command: one module per subcommand, gathered here."""

from __future__ import annotations

import typer

from lwm.cli import agent, bench, collect, data, demo, models, shell, simulate, testserver, train

app = typer.Typer(name="lwm", help="Language world models: simulate an agent's environment with an LLM.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
for module in (demo, simulate, shell, models, collect, data, bench, train, agent, testserver):
    module.register(app)


def main() -> None:
    app()
