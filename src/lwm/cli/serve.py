"""``lwm serve``: a simulated (or real) environment where agents and trainers already look."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from lwm.cli import options as o
from lwm.cli.common import fail
from lwm.domains import domain_names
from lwm.envs.control import ControlSpec

if TYPE_CHECKING:
    from lwm.serve.session import ServeConfig

serve_app = typer.Typer(help="Serve an environment over OpenEnv or MCP (simulated by a world model, or real).",
                        no_args_is_help=True)

Domain = Annotated[str, typer.Option(help="The domain to serve: " + ", ".join(domain_names()) + ".")]
Real = Annotated[bool, typer.Option("--real", help="Serve the real environment instead of the world model.")]
Store = Annotated[Path | None, typer.Option(help="Record every served episode in this trajectory store.")]
Host = Annotated[str, typer.Option(help="Address to bind; anything but loopback needs --token.")]
Port = Annotated[int, typer.Option(help="Port.")]
Token = Annotated[str | None, typer.Option(help="Bearer token clients must send (or put in the URL: /t/<token>).",
                                           envvar="LWM_SERVE_TOKEN")]
MaxSessions = Annotated[int, typer.Option(help="Most sessions at once (one per connected client).")]
IdleSeconds = Annotated[float, typer.Option(help="A session with no message for this long is closed.")]
MaxTurns = Annotated[int, typer.Option(help="Steps after which an episode is truncated.")]
Control = Annotated[Path | None, typer.Option(help="A control spec (YAML): perturbations and a world bible "
                                              "(docs/serving.md).")]


def _control(path: Path | None) -> ControlSpec | None:
    try:
        return ControlSpec.load(path) if path else None
    except (ValueError, OSError) as exc:
        raise fail(f"--control {exc}" if isinstance(exc, ValueError) else f"--control {path}: {exc.strerror}", 2) \
            from None


def _config(options: o.ModelOptions | None, control: Path | None, **fields: Any) -> ServeConfig:
    """The served environment's settings: the model options (None: no world model) and control spec, then
    ``fields``."""
    from lwm.serve.session import ServeConfig

    return ServeConfig(model=options, control=_control(control), **fields)


def _serve_http(app: Any, host: str, port: int, token: str | None) -> None:
    import uvicorn

    from lwm.envs.real.process import stop_in_flight
    from lwm.serve.auth import protect

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            stop_in_flight()  # a step waiting out a long duration or command ends now, not after it
            super().handle_exit(sig, frame)

    # uvicorn shuts down gracefully on SIGTERM, then raises the signal again; with the default action that kills
    # the process before the caller's `finally` records the open sessions. As SystemExit, cleanup runs.
    previous = signal.signal(signal.SIGTERM, _exit)
    try:
        Server(uvicorn.Config(protect(app, host, token), host=host, port=port, log_level="warning")).run()
    finally:
        signal.signal(signal.SIGTERM, previous)


def _exit(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


@serve_app.command("openenv")
@o.model_options(exclude=("prompts_dir", "no_cache", "seed", "timeout", "retries"))
def openenv_cmd(domain: Domain = "terminal", real: Real = False, env_option: o.EnvOption = None,
                store: Store = None, control: Control = None, host: Host = "127.0.0.1", port: Port = 8000,
                token: Token = None, max_sessions: MaxSessions = 64, idle_seconds: IdleSeconds = 900.0,
                max_turns: MaxTurns = 50, *,
                options: o.ModelOptions) -> None:
    """An OpenEnv environment server: reset/step/state over WebSocket, one session per client (OpenEnv's
    GenericEnvClient and TRL's OpenEnv integration connect to http://HOST:PORT)."""
    from lwm.serve.auth import UnsafeBind, check_bind
    from lwm.serve.openenv import openenv_app

    if domain not in domain_names():
        raise fail(f"unknown domain {domain!r}; have: {', '.join(domain_names())}", 2)
    try:
        check_bind(host, token)
    except UnsafeBind as exc:
        raise fail(str(exc), 2) from None
    config = _config(options, control, domain=domain, mode="real" if real else "sim",
                     env_options=o.env_options(env_option), store=store, max_turns=max_turns)
    app = openenv_app(config, max_sessions=max_sessions, idle_seconds=idle_seconds)
    what = "the real environment" if real else f"simulated by {options.model}"
    typer.echo(f"lwm serve openenv: {domain}, {what}, at http://{host}:{port}"
               + (" (token required)" if token else "") + (f"; recording to {store}" if store else ""), err=True)
    _serve_http(app, host, port, token)


@serve_app.command("mcp")
@o.model_options(exclude=("prompts_dir", "no_cache", "seed", "timeout", "retries"))
def mcp_cmd(mirror: Annotated[str | None, typer.Option(help="The real server to mirror: a preset (memory, "
                                                       "filesystem, everything, time, git, sequential-thinking), a "
                                                       "command line, or an http(s) URL.")] = None,
            tools: Annotated[Path | None, typer.Option(help="Serve these tools (JSON list) instead of listing a "
                                                       "real server's.")] = None,
            mode: Annotated[str, typer.Option(help="sim (world model), real (pass through, recorded), replay "
                                              "(recorded answers), cache-real-sim (recorded, else real, else sim).")]
            = "sim",
            replay: Annotated[list[Path] | None, typer.Option(help="Trajectories to answer from (replay, "
                                                              "cache-real-sim).")] = None,
            fall_through: Annotated[bool, typer.Option(help="replay: answer unknown calls with the world model "
                                                       "instead of an error.")] = False,
            transport: Annotated[str, typer.Option(help="stdio, or http (streamable HTTP at /mcp).")] = "stdio",
            store: Store = None, control: Control = None, host: Host = "127.0.0.1", port: Port = 8000,
            token: Token = None, max_sessions: MaxSessions = 64, idle_seconds: IdleSeconds = 900.0, *,
            options: o.ModelOptions) -> None:
    """An MCP server with a real server's tools, answered by the world model (or the real server, or
    recordings), one history per client session; every answer says its source in _meta["lwm/source"]."""
    from lwm.serve.auth import UnsafeBind, check_bind
    from lwm.serve.mcp import MirrorServer, load_replay, mirrored_tools, real_options
    from lwm.serve.mirror import MirrorMode

    if transport not in ("stdio", "http"):
        raise fail(f"unknown --transport {transport!r}; have: stdio, http", 2)
    try:
        rules = MirrorMode(mode, fall_through)
        rules.check(real=bool(mirror), replay=bool(replay))
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    try:
        if transport == "http":
            check_bind(host, token)
        real = real_options(mirror)
        listed = mirrored_tools(real, tools)
        recorded = load_replay(replay) if replay else None
    except (UnsafeBind, ValueError, OSError, RuntimeError) as exc:
        raise fail(str(exc), 2) from None
    config = _config(options if rules.simulates else None, control, domain="mcp", mode=mode, store=store)
    mirror_server = MirrorServer(config, listed, real=real if rules.uses_real else None,
                                 replay=recorded, max_sessions=max_sessions, idle_seconds=idle_seconds)
    typer.echo(f"lwm serve mcp: {len(listed)} tools ({mirror or tools}), mode {mode}"
               + (f", {len(recorded)} recorded answers" if recorded else "")
               + (f", at http://{host}:{port}/mcp" if transport == "http" else ", on stdio")
               + (f"; recording to {store}" if store else ""), err=True)
    try:
        if transport == "stdio":
            import anyio

            anyio.run(mirror_server.run_stdio)
        else:
            _serve_http(mirror_server.http_app(host), host, port, token)
    finally:
        mirror_server.close()


def register(app: typer.Typer) -> None:
    app.add_typer(serve_app, name="serve")
