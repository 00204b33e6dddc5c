"""``lwm testserver``: the scripted OpenAI-compatible server, for trying lwm without a real model."""

from __future__ import annotations

from typing import Annotated

import typer


def testserver(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0 = any free port).")] = 8000,
    latency: Annotated[float, typer.Option(help="Seconds before each answer.")] = 0.0,
    reasoning_field: Annotated[bool, typer.Option(help="Send reasoning in reasoning_content.")] = False,
) -> None:
    """Serve scripted answers on 127.0.0.1 with injectable faults (see lwm.testing.openai_server)."""
    from lwm.testing.openai_server import ScriptedServer

    server = ScriptedServer(latency=latency, reasoning_field=reasoning_field, port=port)
    server.start()
    typer.echo(f"scripted OpenAI-compatible server at {server.base_url} (Ctrl+C to stop)")
    server.wait()


def register(app: typer.Typer) -> None:
    app.command("testserver")(testserver)
