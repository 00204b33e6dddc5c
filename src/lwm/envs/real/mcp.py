"""The real MCP environment: any MCP server through the official ``mcp`` SDK, over stdio or HTTP.

The server's tool list becomes the session's context; each action is one tool call and its result
becomes the observation, rendered one way for every server: text parts as they are, structured
content as indented JSON when there is no text, images and resources as one-line placeholders, and
an error result (or a protocol error) starting with ``Error:``.

The SDK is async and its client must be opened and closed by one task, so each environment owns a
small event loop in a thread of its own; the Gymnasium calls hand work to it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lwm import provision
from lwm.envs.base import TextEnv
from lwm.envs.real.enclosure import new_work_folder
from lwm.envs.real.process import Reaper
from lwm.envs.real.sandbox import DEFAULT_LIMITS, Limits, Sandbox
from lwm.registry import register
from lwm.types import Action, Context, Observation, Provenance


@dataclass(frozen=True)
class MCPServer:
    """How to reach a server: a command for stdio, or the URL of a streamable HTTP endpoint."""

    command: str | None = None
    args: tuple[str, ...] = ()
    url: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    log: str | None = None
    """Where a stdio server's stderr goes (discarded by default)."""
    limits: Limits | None = None
    """The sandbox's limits for this server when they must differ from the environment's (node's WebAssembly
    reserves more address space than the default 2 GiB cap allows)."""

    @property
    def label(self) -> str:
        return self.url or " ".join([self.command or "", *self.args]).strip()


def render_result(result: Any) -> tuple[str, bool]:
    """(observation text, is_error) for a CallToolResult."""
    parts: list[str] = []
    for item in result.content or []:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind}: {item.mime_type}, {len(item.data) * 3 // 4} bytes]")
        elif kind == "resource":
            res = item.resource
            parts.append(getattr(res, "text", None) or f"[resource: {res.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource link: {item.uri}]")
        else:
            parts.append(json.dumps(item.model_dump(mode="json", exclude_none=True), ensure_ascii=False))
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    text = "\n".join(parts)
    error = bool(result.is_error)
    if error and not text.lower().startswith("error"):
        text = f"Error: {text}" if text else "Error"
    return text, error


class MCPConnection:
    """An open client session to one server, driven from sync code through its own loop thread."""

    def __init__(self, server: MCPServer, timeout: float = 30.0):
        self.server, self.timeout = server, timeout
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="lwm-mcp", daemon=True)
        self._thread.start()
        self._ready: asyncio.Future[Any] | None = None
        self._stop: asyncio.Event | None = None
        self.session: Any = None
        self.tools: list[dict[str, Any]] = []
        self.server_info: dict[str, Any] = {}
        self.instructions: str | None = None
        self._owner = asyncio.run_coroutine_threadsafe(self._own(), self.loop)
        try:
            self._call(self._wait_ready())
        except BaseException:
            self.close()
            raise

    async def _wait_ready(self) -> None:
        while self._ready is None:
            await asyncio.sleep(0.001)
        await self._ready

    async def _own(self) -> None:
        """Open the client, list the tools, then hold everything open until asked to stop."""
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client

        self._ready = self.loop.create_future()
        self._stop = asyncio.Event()
        try:
            async with AsyncExitStack() as stack:
                if self.server.url:
                    streams = await stack.enter_async_context(streamable_http_client(self.server.url))
                else:
                    params = StdioServerParameters(command=self.server.command, args=list(self.server.args),
                                                   env=self.server.env or None, cwd=self.server.cwd)
                    log = stack.enter_context(open(self.server.log or os.devnull, "a"))  # noqa: SIM115
                    streams = await stack.enter_async_context(stdio_client(params, errlog=log))
                self.session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
                init = await self.session.initialize()
                self.server_info = init.server_info.model_dump(mode="json", exclude_none=True)
                self.instructions = init.instructions
                listing = await self.session.list_tools()
                self.tools = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listing.tools]
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(RuntimeError(f"MCP server {self.server.label!r} failed to start: {exc!r}"))
            else:
                raise

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(asyncio.wait_for(coro, self.timeout), self.loop).result()

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return self._call(self.session.call_tool(name, arguments))

    def close(self) -> None:
        if self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
            try:
                self._owner.result(timeout=10)
            except BaseException:  # the server may already be gone; closing must still finish
                pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


SANDBOX_WORKDIR = "/home/user/work"
NPM_BIN = provision.npm_bin()
PYPI_BIN = provision.pypi_bin()
"""PyPI servers pinned to an older mcp SDK than lwm's live in their own environment (``lwm setup mcp``)."""
PRESETS: dict[str, MCPServer] = {
    "memory": MCPServer(str(NPM_BIN / "mcp-server-memory"), env={"MEMORY_FILE_PATH": "{workdir}/memory.jsonl"}),
    "filesystem": MCPServer(str(NPM_BIN / "mcp-server-filesystem"), ("{workdir}",)),
    "everything": MCPServer(str(NPM_BIN / "mcp-server-everything"), ("stdio",)),
    "time": MCPServer("mcp-server-time", ("--local-timezone", "UTC")),
    "git": MCPServer("mcp-server-git", ("--repository", "{workdir}")),
    "sequential-thinking": MCPServer(str(NPM_BIN / "mcp-server-sequential-thinking"),
                                     env={"DISABLE_THOUGHT_LOGGING": "true"}),
    "sqlite": MCPServer(str(PYPI_BIN / "mcp-server-sqlite"), ("--db-path", "{workdir}/shop.db")),
    "code-runner": MCPServer(str(NPM_BIN / "mcp-server-code-runner"),
                             limits=replace(DEFAULT_LIMITS, memory_mb=None)),
    "calculator": MCPServer(str(PYPI_BIN / "mcp-server-calculator")),
    "duckdb": MCPServer(str(PYPI_BIN / "mcp-server-duckdb"), ("--db-path", "{workdir}/shop.duckdb")),
    "shell": MCPServer(str(PYPI_BIN / "mcp-shell-server"),
                       env={"ALLOW_COMMANDS": "ls,cat,echo,wc,head,tail,grep,sort,uniq,date,pwd,mkdir,touch,find"}),
}
"""Servers the tests and ``lwm collect --env-option preset=NAME`` use; ``{workdir}`` is the episode's folder.
``preset=pytools:GROUP`` is one more: real Python APIs as tools (``lwm.envs.real.pytools``)."""
PYTOOLS = "pytools:"


def is_preset(name: str) -> bool:
    return name in PRESETS or name.startswith(PYTOOLS)


def preset_server(name: str) -> MCPServer:
    """A preset by name: one of ``PRESETS``, or ``pytools:GROUP``."""
    if name.startswith(PYTOOLS):
        return MCPServer(sys.executable, ("-m", "lwm.envs.real.pytools", name.removeprefix(PYTOOLS)))
    if name not in PRESETS:
        raise ValueError(f"unknown MCP server preset {name!r}; known: {', '.join(PRESETS)}, {PYTOOLS}GROUP "
                         "(python -m lwm.envs.real.pytools --list)")
    return PRESETS[name]


def _command_path(command: str) -> str:
    """A server's executable: a path as given (lwm's provisioned servers: said missing in one line), a bare name
    from lwm's own interpreter's folder first (a venv that is not activated), then PATH."""
    if os.sep in command:
        if Path(command).is_relative_to(provision.data_dir()):
            provision.require(Path(command), f"the MCP server {Path(command).name}", "mcp")
        return command
    beside = Path(sys.executable).parent / command
    return str(beside) if beside.exists() else shutil.which(command) or command


@register("env", "mcp")
class MCPEnv(TextEnv):
    """One server per episode, started fresh in its own work folder, sandboxed when it runs over stdio."""

    def __init__(self, server: MCPServer | None = None, context: Context | None = None, *,
                 preset: str | None = None, command: str | None = None, args: list[str] | None = None,
                 url: str | None = None, timeout: float = 30.0, sandbox: bool = True,
                 setup: list[str] | None = None, limits: Limits | dict[str, Any] = DEFAULT_LIMITS,
                 render_mode: str | None = None):
        self.server = server or (preset_server(preset) if preset else MCPServer(command, tuple(args or ()), url))
        if not (self.server.command or self.server.url):
            raise ValueError("the mcp environment needs a server: a preset (--env-option preset=NAME; presets: "
                             f"{', '.join(PRESETS)}), a command (command=..., args=[...]) or a url (url=...)")
        self.timeout, self.sandbox, self.setup = timeout, sandbox, setup or []
        self.limits = Limits.of(limits)
        self.connection: MCPConnection | None = None
        self.workdir: Path | None = None
        self._sandbox: Sandbox | None = None
        self._reaper: Reaper | None = None
        super().__init__("mcp", context, render_mode)

    def _launch_spec(self) -> MCPServer:
        """The server with ``{workdir}`` filled in and, for stdio, its command wrapped in the sandbox."""
        assert self.workdir is not None
        sandboxed = self.sandbox and not self.server.url
        inside = SANDBOX_WORKDIR if sandboxed else str(self.workdir)
        fill = lambda text: text.replace("{workdir}", inside)  # noqa: E731
        server = MCPServer(self.server.command, tuple(fill(a) for a in self.server.args), self.server.url,
                           {k: fill(v) for k, v in self.server.env.items()}, str(self.workdir), self.server.log)
        if not sandboxed:
            return server
        command = _command_path(server.command or "")
        path = f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
        self._sandbox = Sandbox(self.workdir, env={"PATH": path, **server.env}, mount_at=SANDBOX_WORKDIR,
                                limits=self.server.limits or self.limits)
        argv = self._sandbox.argv(command, *server.args)
        return MCPServer(argv[0], tuple(argv[1:]), None, {}, str(self.workdir), server.log)

    def provenance(self) -> Provenance:
        info = self.connection.server_info if self.connection else {}
        return Provenance(source="real", environment=f"mcp:{info.get('name', self.server.label)}",
                          extra={"server": self.server.label, "version": info.get("version")})

    def initial_observation(self, seed: int | None, options: dict[str, Any]) -> str:
        self.close()
        self.workdir, self._reaper = new_work_folder("lwm-mcp-", (self.server.limits or self.limits).disk_mb)
        for command in self.setup:  # e.g. seed files or a git repository for the server to work on
            subprocess.run(command, shell=True, cwd=self.workdir, check=True, capture_output=True)
        self.connection = MCPConnection(self._launch_spec(), self.timeout)
        update: dict[str, Any] = {"tools": self.connection.tools}
        if self.connection.instructions:  # what the server tells every client about itself
            update["extra"] = {**self.context.extra, "server_instructions": self.connection.instructions}
        self.context = self.context.model_copy(update=update)
        self.trajectory = self._new_trajectory()
        return self.context.initial_state or ""

    def transition(self, action: Action) -> Observation:
        assert self.connection is not None, "reset() first"
        name, args = action.content["name"], action.content["arguments"]
        try:
            text, error = render_result(self.connection.call_tool(name, args))
        except TimeoutError:
            text, error = f"Error: tool {name} timed out after {self.timeout:g} s", True
        except Exception as exc:  # a protocol error (unknown tool, bad params) is what the client shows
            text, error = f"Error: {getattr(exc, 'message', None) or exc}", True
        return Observation(content=text, metadata={"tool": name, "tool_error": error})

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None
        if self._sandbox is not None:
            self._sandbox.close()
        if self._reaper is not None:
            self._reaper.close()  # the work folder
        self.workdir = self._sandbox = self._reaper = None
