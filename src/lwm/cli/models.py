"""``lwm models``: the backends, and whether each is usable on this machine."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lwm.backends import DEFAULT_SPEC, backend_infos
from lwm.cli import options as o


def models(base_url: o.BaseUrl = None) -> None:
    """List the model backends and whether each is usable here (an openai server is probed, 2 s)."""
    table = Table(title="lwm backends", caption=f"default model: {DEFAULT_SPEC} (--model, or LWM_MODEL)")
    for column in ("backend", "usable", "spec example", "detail"):
        table.add_column(column, overflow="fold")  # wrapped, never cut, at any width (a pipe is 80 columns)
    for info in backend_infos({"openai": {"base_url": base_url}}):
        usable = "[green]yes[/]" if info.usable else "[red]no[/]"
        table.add_row(info.name, usable, escape(info.example), escape(info.detail))
    Console().print(table)


def register(app: typer.Typer) -> None:
    app.command("models")(models)
