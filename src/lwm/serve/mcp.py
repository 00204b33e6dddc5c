"""The MCP face: a server built with the official ``mcp`` SDK that lists a real server's tools (names,
descriptions, input schemas) and answers each call from the session core, one history per client
session, over stdio or streamable HTTP.

Each answer carries ``_meta["lwm/source"]`` (sim, real or replay) and the session id; every session is
recorded as a trajectory (with each step's source) when it ends or expires.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from lwm.data import read_trajectories
from lwm.serve.mirror import MirrorEnv, Replay
from lwm.serve.session import ServeConfig, Sessions
from lwm.types import Context, read_tools

SOURCE = "lwm/source"


def mirrored_tools(real_options: dict[str, Any] | None = None, tools_file: Path | None = None) -> list[dict[str, Any]]:
    """The tools to serve: read from ``tools_file`` (a JSON list, or ``{"tools": [...]}`` as tools/list
    returns it), or listed by starting the real server once."""
    if tools_file is not None:
        return read_tools(tools_file)
    if real_options is None:
        raise ValueError("say which server to mirror: --mirror PRESET|COMMAND|URL, or --tools tools.json")
    from lwm.envs.real.mcp import MCPEnv

    env = MCPEnv(**real_options)
    try:
        env.reset()
        return list(env.context.tools)
    finally:
        env.close()


def real_options(mirror: str | None, sandbox: bool = True) -> dict[str, Any] | None:
    """``--mirror`` as MCPEnv options: a preset name, an http(s) URL, or a command line."""
    if not mirror:
        return None
    from lwm.envs.real.mcp import PRESETS, is_preset

    if is_preset(mirror):
        return {"preset": mirror, "sandbox": sandbox}
    if mirror.startswith(("http://", "https://")):
        return {"url": mirror}
    command, *args = mirror.split()
    if shutil.which(command) is None:
        raise ValueError(f"--mirror {mirror!r}: not a preset ({', '.join(PRESETS)}), an http(s) URL, or a command "
                         f"found on PATH ({command!r} is not)")
    return {"command": command, "args": args, "sandbox": sandbox}


class MirrorServer:
    """The sessions and tools behind one MCP server; ``server`` is the SDK's low-level ``Server``."""

    def __init__(self, config: ServeConfig, tools: list[dict[str, Any]], *, real: dict[str, Any] | None = None,
                 replay: Replay | None = None, context: Context | None = None, max_sessions: int = 64,
                 idle_seconds: float = 900.0, name: str = "lwm-mirror"):
        # One client session is one episode however many calls it makes: truncating it would start a new one,
        # and with it a new real server whose state (what the earlier calls created) is gone.
        self.config = config = dataclasses.replace(config, max_turns=None)
        # Output schemas are not advertised: a client must then validate structured content against them,
        # and a simulated answer cannot promise to fit. Answers that are JSON objects still come structured.
        self.listed = [types.Tool.model_validate({k: v for k, v in t.items() if k != "outputSchema"}) for t in tools]
        self.sessions = Sessions(config, "mcp", max_sessions, idle_seconds, make=lambda ctx: MirrorEnv(
            config.mode, tools, world_model=self.sessions.world_model, real_options=real,  # type: ignore[arg-type]
            replay=replay, context=ctx or context))
        self.server = Server(name, version="0.1.0", on_list_tools=self._list_tools, on_call_tool=self._call_tool)
        self._stdio: str | None = None

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.listed)

    def _key(self, ctx: Any) -> str:
        """One history per client: the streamable HTTP session id, or the one stdio connection (the SDK makes
        a new session object per request, so the object cannot be the key)."""
        request = getattr(ctx, "request", None)
        header = request.headers.get("mcp-session-id") if request is not None else None
        return header or self._stdio or f"connection-{id(ctx.session)}"

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            session = self.sessions.get(self._key(ctx))
        except RuntimeError as exc:  # all sessions in use
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"Error: {exc}")], is_error=True)
        action = {"name": params.name, "arguments": params.arguments or {}}

        def call() -> tuple[str, dict[str, Any]]:
            with session.lock:
                if session.env is None or session.done:
                    session.reset()
                result = session.step(action)
                turns = session.env.trajectory.turns if session.env is not None else []
                meta = turns[-1].observation.metadata if turns and not result.info.get("invalid_action") else {}
                return result.observation, {**meta, "session": session.id}

        try:
            text, meta = await anyio.to_thread.run_sync(call)
        except Exception as exc:  # noqa: BLE001 - a failing world model or server is this call's error only
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"Error: {type(exc).__name__}: "
                                                                   f"{exc}")], is_error=True)
        error = bool(meta.get("tool_error")) or text.startswith("Error")
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error,
                                    structured_content=None if error else _json_object(text),
                                    meta={SOURCE: meta.get("source", self.config.mode), "lwm/session": meta["session"]})

    async def run_stdio(self) -> None:
        import uuid

        from mcp.server.stdio import stdio_server

        self._stdio = f"stdio-{uuid.uuid4().hex[:8]}"  # a stdio server has one client: its parent process
        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(self, host: str = "127.0.0.1") -> Any:
        """The streamable HTTP app (at ``/mcp``); run it with its lifespan (it starts the session manager).
        Answers are plain JSON, not an SSE stream per call: a tool answer is one message, and JSON costs less."""
        return self.server.streamable_http_app(host=host, json_response=True, max_sessions=self.sessions.max_sessions,
                                               session_idle_timeout=self.sessions.idle_seconds)

    def close(self) -> None:
        self.sessions.close()


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def load_replay(paths: list[Path]) -> Replay:
    return Replay(t for p in paths for t in read_trajectories(p) if t.domain == "mcp")
