"""``lwm setup``: provision what the real environments need (``lwm.provision``), or list what is there."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lwm import provision
from lwm.cli.common import fail


def setup(envs: Annotated[list[str] | None, typer.Argument(metavar="ENV", 
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
    failed: list[str] = []

    def attempt(what: str, step: Callable[[], object]) -> None:
        """One part of setup; its failure is one line, and the other parts still install."""
        try:
            step()
        except (RuntimeError, OSError) as exc:
            failed.append(what)
            console.print(f"setup: {what} failed: {exc}", style="red", soft_wrap=True, markup=False)

    missing = provision.missing_system(chosen)
    if missing and not check and system:
        attempt("system packages", lambda: _system_packages(missing, allow_upgrades, console, say))
        missing = provision.missing_system(chosen)
    parts = [p for p in provision.PARTS if p.env in chosen]
    if not check and any(not p.ready() for p in parts):
        _check_writable(provision.data_dir())
        for part in parts:
            if not part.ready():
                console.print(f"setup: installing {part.describe} into {part.folder()}")
                attempt(f"installing {part.describe}", lambda part=part: part.install(say))
    table = Table(title=f"lwm setup ({provision.data_dir()})")
    for column in ("part", "for", "state"):
        table.add_column(column)
    for part in parts:
        problems = part.problems()
        state = f"[red]{escape('; '.join(problems))}[/]" if problems else "[green]ready[/]"
        table.add_row(part.describe, part.env, state)
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
    if missing or failed or any(not p.ready() for p in parts):
        raise typer.Exit(1)


def _system_packages(missing: list[str], allow_upgrades: bool, console: Console, say: Callable[[str], None]) -> None:
    """As root, install the missing system packages with apt, none that would upgrade an installed one unless
    allowed; documentation packages that cannot be installed (held back, or not root) are unpacked into lwm's
    data folder instead, so no corpus is lost to a held-back package."""
    docs: list[str] = []
    if os.geteuid() == 0:
        provision.run_step(["apt-get", "update", "-qq"], say)
        go, held = (missing, {}) if allow_upgrades else provision.split_upgrades(missing)
        for package, upgrades in held.items():
            if provision.is_documentation(package):
                docs.append(package)
                console.print(f"setup: not installing {package} (it would upgrade {' '.join(upgrades)}): unpacking "
                              "its documents into lwm's data folder instead")
            else:
                console.print(f"setup: not installing {package}: it would upgrade {' '.join(upgrades)}, which are "
                              "installed (--allow-upgrades installs it anyway)")
        if go:
            console.print(f"setup: installing system packages: {' '.join(go)}")
            provision.run_step(provision.apt_line(go), say, deadline=3 * provision.DEADLINE,
                               env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    elif shutil.which("apt-get"):
        docs = [p for p in missing if provision.is_documentation(p)]
    if docs:
        _check_writable(provision.data_dir())
        unpacked = provision.unpack_documentation(docs, say)
        console.print(f"setup: unpacked {' '.join(unpacked)} into {provision.debian_root()} (not installed)")


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
