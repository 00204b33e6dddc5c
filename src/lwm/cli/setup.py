"""``lwm setup``: provision what the real environments need (``lwm.provision``), or list what is there."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from lwm import provision
from lwm.cli.common import fail


def setup(envs: Annotated[list[str] | None, typer.Argument(
              help=f"Environments to provision ({', '.join(provision.ENVS)}); none: all of them.")] = None,
          check: Annotated[bool, typer.Option("--check", help="Only list what is there and what is missing.")] = False,
          system: Annotated[bool, typer.Option(
              "--system/--no-system",
              help="As root, install the missing system packages with apt (only those; nothing is upgraded).")] = True,
          allow_upgrades: Annotated[bool, typer.Option(
              "--allow-upgrades", help="Also install a missing system package whose install upgrades installed ones "
              "(by default it is left out and named).")] = False,
          ) -> None:
    """Install what the real environments need into lwm's data folder (LWM_DATA_DIR overrides): the npm and
    PyPI MCP servers, the SWE projects' source distributions; and check the system packages (as root, install
    the missing ones). Safe to rerun: what is there is kept, a killed run resumes."""
    chosen = list(dict.fromkeys(envs or provision.ENVS))
    unknown = [e for e in chosen if e not in provision.ENVS]
    if unknown:
        raise typer.BadParameter(f"unknown environment {', '.join(unknown)}; known: {', '.join(provision.ENVS)}")
    console = Console(stderr=True)
    say = lambda line: console.print(f"[dim]setup: {line}[/]")  # noqa: E731
    missing = provision.missing_system(chosen)
    if missing and not check and system and os.geteuid() == 0:
        try:
            provision.run_step(["apt-get", "update", "-qq"], say)
        except RuntimeError as exc:
            raise fail(f"setup: {exc}") from None
        go, held = (missing, {}) if allow_upgrades else provision.split_upgrades(missing)
        for package, upgrades in held.items():
            console.print(f"setup: not installing {package}: it would upgrade {' '.join(upgrades)}, which are "
                          "installed (--allow-upgrades installs it anyway)")
        if go:
            console.print(f"setup: installing system packages: {' '.join(go)}")
            try:
                provision.run_step(provision.apt_line(go), say, deadline=3 * provision.DEADLINE,
                                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
            except RuntimeError as exc:
                raise fail(f"setup: {exc}") from None
        missing = provision.missing_system(chosen)
    parts = [p for p in provision.PARTS if p.env in chosen]
    if not check and any(not p.ready() for p in parts):
        _check_writable(provision.data_dir())
        for part in parts:
            if not part.ready():
                console.print(f"setup: installing {part.describe} into {part.folder()}")
                try:
                    part.install(say)
                except OSError as exc:
                    raise fail(f"setup: installing {part.describe} failed: {exc}") from None
    table = Table(title=f"lwm setup ({provision.data_dir()})")
    for column in ("part", "for", "state"):
        table.add_column(column)
    for part in parts:
        table.add_row(part.describe, part.env, "[green]ready[/]" if part.ready() else "[red]missing[/]")
    if "mcp" in chosen:  # not lwm setup's to install: they come with lwm[mcp], into lwm's own environment
        here = Path(sys.executable).parent
        absent = [name for name in ("mcp-server-time", "mcp-server-git") if not (here / name).exists()]
        table.add_row("PyPI MCP servers beside lwm (time, git)", "mcp",
                      "[green]ready[/]" if not absent else "[red]missing: pip install 'lwm[mcp]'[/]")
    table.add_row("system packages", ", ".join(chosen),
                  "[green]ready[/]" if not missing else f"[red]missing: {' '.join(missing)}[/]")
    Console().print(table)
    if missing:
        console.print(f"setup: as root: {' '.join(provision.apt_line(missing))}")
    if missing or any(not p.ready() for p in parts):
        raise typer.Exit(1)


def _check_writable(folder: Path) -> None:
    """A data folder that is a file or cannot be written is one line, before anything is fetched."""
    if folder.exists() and not folder.is_dir():
        raise fail(f"setup: lwm's data folder {folder} is a file; point LWM_DATA_DIR at a folder", 2)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise fail(f"setup: lwm's data folder {folder} is not a writable folder ({exc.strerror or exc}); point "
                   "LWM_DATA_DIR at one", 2) from None


def register(app: typer.Typer) -> None:
    app.command("setup")(setup)
