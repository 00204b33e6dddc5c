"""What serving costs per step, side by side in one run: SimEnv.step called directly vs the same steps
through `lwm serve openenv` (OpenEnv's WebSocket client) and `lwm serve mcp` (the mcp client over
streamable HTTP), with 1, 16 and 64 concurrent sessions.

The world model is the scripted OpenAI-compatible server (`lwm testserver`, fixed latency) in its own
process; each face runs in its own process too, so the clients here measure what a trainer would. Every
step's action differs, so no answer comes from the cache. Prints steps/s, p50/p99 step latency and the
serving layer's added p50 (served minus direct), and the CPU time per step of the direct run and of the
server process (the serving layer's own cost, apart from the clients': on a small machine the clients and
the server share the cores, and the latency difference then mostly measures that sharing). A second table
measures each protocol without lwm: an MCP server of the same SDK and transport settings whose tool answers at
once, and an openenv-core server whose environment answers every step at once, driven by the same clients (their
server CPU per call is the floor any face built on those SDKs pays), and the clients' own CPU per call.
Targets (issue 64): served CPU <= 0.5 ms a step over direct, added p50 < 2 ms at 1 and 16 sessions.
Usage: python benchmarks/serve_throughput.py [--latency 0.05] [--steps 400] [--sessions 1 16 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2 as httpx
from rich.console import Console
from rich.table import Table

LWM = str(Path(sys.executable).parent / "lwm")
console = Console(width=200)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str], ready_url: str, env: dict[str, str]) -> subprocess.Popen:
    proc = subprocess.Popen([LWM, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(ready_url, timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"{' '.join(args)} did not start")


def action(session: int, step: int) -> list[dict]:
    return [{"keystrokes": f"echo session {session} step {step}\n", "duration": 0.1}]


def lookup(session: int, step: int) -> dict:
    return {"name": "lookup", "arguments": {"key": f"session {session} step {step}"}}


def direct(base_url: str, sessions: int, steps: int, domain: str = "terminal",
           tools: list[dict] | None = None) -> tuple[list[float], float]:
    """Per-step seconds and wall time: SimEnv.step in one thread per session, one shared world model; the
    same actions the matching face's clients send (keystrokes for the terminal, a lookup call for mcp)."""
    from lwm.envs import SimEnv
    from lwm.types import Context
    from lwm.worldmodel import WorldModel

    wm = WorldModel("openai:scripted", base_url=base_url, api_key="x")
    times: list[float] = []
    lock = threading.Lock()

    def run(i: int) -> None:
        env = SimEnv(wm, domain, Context(tools=tools or []))
        env.reset(seed=i)
        for k in range(steps):
            step = action(i, k) if domain == "terminal" else lookup(i, k)
            started = time.perf_counter()
            env.step(json.dumps(step))
            with lock:
                times.append(time.perf_counter() - started)

    started = time.perf_counter()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times, time.perf_counter() - started


async def openenv_clients(url: str, sessions: int, steps: int) -> tuple[list[float], float]:
    from openenv.core import GenericEnvClient

    times: list[float] = []

    async def run(i: int) -> None:
        async with GenericEnvClient(base_url=url, message_timeout_s=600) as env:
            await env.reset(seed=i)
            for k in range(steps):
                started = time.perf_counter()
                await env.step({"action": action(i, k)})
                times.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(run(i) for i in range(sessions)))
    return times, time.perf_counter() - started


async def mcp_clients(url: str, sessions: int, steps: int) -> tuple[list[float], float]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    times: list[float] = []

    async def run(i: int) -> None:
        async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            for k in range(steps):
                started = time.perf_counter()
                call = lookup(i, k)
                await session.call_tool(call["name"], call["arguments"])
                times.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(run(i) for i in range(sessions)))
    return times, time.perf_counter() - started


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(pid: int | None, work: Callable[..., Any], *args: Any) -> tuple[list[float], float, float, float]:
    """``work(*args)``'s step times and wall time (a coroutine function is run to completion), the CPU seconds
    it cost this process's (direct, ``pid`` None) or the server process's (served), and this process's (the
    clients', when served)."""
    before, here = cpu_seconds(pid) if pid else time.process_time(), time.process_time()
    times, wall = asyncio.run(work(*args)) if asyncio.iscoroutinefunction(work) else work(*args)
    return times, wall, (cpu_seconds(pid) if pid else time.process_time()) - before, time.process_time() - here


def ready(url: str, seconds: float = 60) -> None:
    """Wait until something answers at ``url`` (any status)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing answers at {url}") from None
            time.sleep(0.2)


def floor_openenv(port: int) -> None:
    """OpenEnv's own cost, for comparison: an ``openenv-core`` server (same ``create_fastapi_app``, the same action and
    observation types as ``lwm serve openenv``) whose environment answers every step at once. Runs in a child
    process."""
    import uvicorn
    from openenv.core.env_server import ConcurrencyConfig, Environment, State, create_fastapi_app

    from lwm.serve.openenv import LwmAction, LwmObservation

    class Echo(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def reset(self, seed: int | None = None, episode_id: str | None = None, **_: Any) -> LwmObservation:
            return LwmObservation(text="ready")

        def step(self, action: LwmAction, timeout_s: float | None = None, **_: Any) -> LwmObservation:
            return LwmObservation(text=f"ran {action.action}")

        @property
        def state(self) -> State:
            return State()

    app = create_fastapi_app(Echo, LwmAction, LwmObservation,
                             concurrency_config=ConcurrencyConfig(max_concurrent_envs=256, session_timeout=900))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="critical")


def floor_mcp(port: int) -> None:
    """The MCP SDK's own cost, for comparison: a server of the same SDK and transport settings as ``lwm serve mcp``
    (low-level ``Server``, streamable HTTP, JSON answers) whose one tool answers at once. Runs in a child process."""
    import mcp_types as types
    import uvicorn
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="lookup", input_schema={"type": "object"})])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"found {params.arguments}")])

    server = Server("floor", version="0", on_list_tools=list_tools, on_call_tool=call_tool)
    app = server.streamable_http_app(host="127.0.0.1", json_response=True, max_sessions=256, session_idle_timeout=900)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="critical", lifespan="on")


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] * 1000 if len(values) > 1 else values[0] * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.05, help="Scripted model seconds per answer.")
    parser.add_argument("--steps", type=int, default=400, help="Steps per row (split over the sessions).")
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 16, 64])
    args = parser.parse_args()
    tools = [{"name": "lookup", "description": "Find a record", "inputSchema": {
        "type": "object", "properties": {"key": {"type": "string"}}}}]
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "LWM_CACHE_DIR": tmp, "OPENAI_API_KEY": "x"}
        os.environ.update(LWM_CACHE_DIR=tmp, OPENAI_API_KEY="x")
        (Path(tmp) / "tools.json").write_text(json.dumps(tools))
        model_port, openenv_port, mcp_port = free_port(), free_port(), free_port()
        base_url = f"http://127.0.0.1:{model_port}/v1"
        model = ["--model", "openai:scripted", "--base-url", base_url]
        procs = [start(["testserver", "--port", str(model_port), "--latency", str(args.latency)],
                       f"{base_url}/models", env)]
        mcp_floor_port, openenv_floor_port = free_port(), free_port()
        floor = multiprocessing.Process(target=floor_mcp, args=(mcp_floor_port,), daemon=True)
        openenv_floor = multiprocessing.Process(target=floor_openenv, args=(openenv_floor_port,), daemon=True)
        floor.start()
        openenv_floor.start()
        floor_url, floors = f"http://127.0.0.1:{mcp_floor_port}/mcp", []
        openenv_floor_url = f"http://127.0.0.1:{openenv_floor_port}"
        try:
            ready(floor_url)
            ready(f"{openenv_floor_url}/health")
            procs.append(start(["serve", "openenv", "--domain", "terminal", *model, "--port", str(openenv_port),
                                "--max-sessions", "256", "--max-turns", "100000"],
                               f"http://127.0.0.1:{openenv_port}/health", env))
            procs.append(start(["serve", "mcp", "--tools", str(Path(tmp) / "tools.json"), "--transport", "http",
                                *model, "--port", str(mcp_port), "--max-sessions", "256"],
                               f"http://127.0.0.1:{mcp_port}/", env))
            table = Table(title=f"serving cost per step (scripted model, {args.latency * 1000:.0f} ms per answer)")
            for column in ("face", "sessions", "steps", "direct steps/s", "served steps/s", "direct p50 ms",
                           "served p50 ms", "direct p99 ms", "served p99 ms", "added p50 ms", "wall ratio",
                           "direct CPU ms/step", "server CPU ms/step"):
                table.add_column(column, justify="right")
            openenv_url, mcp_url = f"http://127.0.0.1:{openenv_port}", f"http://127.0.0.1:{mcp_port}/mcp"
            for sessions in args.sessions:
                steps = max(1, args.steps // sessions)
                rows = [("openenv", measured(None, direct, base_url, sessions, steps),
                         measured(procs[1].pid, openenv_clients, openenv_url, sessions, steps)),
                        ("mcp", measured(None, direct, base_url, sessions, steps, "mcp", tools),
                         measured(procs[2].pid, mcp_clients, mcp_url, sessions, steps))]
                floors.append(("openenv", sessions, measured(openenv_floor.pid, openenv_clients, openenv_floor_url,
                                                             sessions, steps), rows[0][2]))
                floors.append(("mcp", sessions, measured(floor.pid, mcp_clients, floor_url, sessions, steps),
                               rows[1][2]))
                for face, (d, d_wall, d_cpu, _), (s, s_wall, s_cpu, _) in rows:
                    table.add_row(face, str(sessions), str(len(s)), f"{len(d) / d_wall:.1f}", f"{len(s) / s_wall:.1f}",
                                  f"{pct(d, 50):.1f}", f"{pct(s, 50):.1f}", f"{pct(d, 99):.1f}", f"{pct(s, 99):.1f}",
                                  f"{pct(s, 50) - pct(d, 50):+.2f}", f"{s_wall / d_wall:.2f}x",
                                  f"{d_cpu / len(d) * 1000:.2f}", f"{s_cpu / len(s) * 1000:.2f}")
                console.print(f"done: {sessions} sessions")
            console.print(table)
            console.print("direct CPU: this process running SimEnv.step; server CPU: the serving process (world "
                          "model client, session, protocol), so their difference is the serving layer's own CPU "
                          "cost per step, apart from the clients'.")
            protocol = Table(title="what each protocol costs without lwm: the same SDK's server answering at once")
            for column in ("face", "sessions", "floor p50 ms", "floor server CPU ms/call",
                           "floor clients' CPU ms/call", "lwm served clients' CPU ms/step"):
                protocol.add_column(column, justify="right")
            for face, sessions, (f, _, f_cpu, f_client), (s, _, _, s_client) in floors:
                protocol.add_row(face, str(sessions), f"{pct(f, 50):.1f}", f"{f_cpu / len(f) * 1000:.2f}",
                                 f"{f_client / len(f) * 1000:.2f}", f"{s_client / len(s) * 1000:.2f}")
            console.print(protocol)
        finally:
            floor.terminate()
            openenv_floor.terminate()
            for proc in procs:
                proc.terminate()
                proc.wait(10)


if __name__ == "__main__":
    main()
