"""The MCP mirror, checked with the official mcp client over stdio and streamable HTTP."""

import asyncio
import json
import shutil
import sys
from pathlib import Path

import httpx2 as httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from lwm.data import read_trajectories
from lwm.model_options import ModelOptions  # noqa: E402
from lwm.serve.mcp import MirrorServer, load_replay, mirrored_tools, real_options
from lwm.serve.session import ServeConfig
from lwm.testing.asgi import ThreadedServer
from lwm.testing.openai_server import ScriptedServer

LWM = str(Path(sys.executable).parent / "lwm")
TOOLS = [{"name": "lookup", "description": "Find a record by key",
          "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}]
needs_sandbox = pytest.mark.skipif(not shutil.which("bwrap"), reason="the time preset runs in bubblewrap")


async def _calls(session: ClientSession, calls: list[tuple[str, dict]]) -> list:
    return [await session.call_tool(name, args) for name, args in calls]


async def over_http(url: str, calls: list[tuple[str, dict]]) -> tuple[list, list]:
    async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        return (await session.list_tools()).tools, await _calls(session, calls)


def served(mirror: MirrorServer) -> ThreadedServer:
    return ThreadedServer(mirror.http_app(), lifespan="on")


def test_http_clients_get_the_tools_and_a_history_each(tmp_path):
    with ScriptedServer() as model:
        config = ServeConfig(domain="mcp", model=ModelOptions("openai:scripted", base_url=model.base_url),
                             store=tmp_path / "s")
        mirror = MirrorServer(config, TOOLS)
        with served(mirror) as server:
            url = f"{server.url}/mcp"
            tools, (a,) = asyncio.run(over_http(url, [("lookup", {"key": "only-in-a"})]))
            _, (b1, b2) = asyncio.run(over_http(url, [("lookup", {"key": "only-in-b"}), ("lookup", {"key": "x"})]))
        mirror.close()
        sent = [json.dumps(r["messages"]) for r in model.requests]
    assert [(t.name, t.description, t.input_schema) for t in tools] == [
        (t["name"], t["description"], t["inputSchema"]) for t in TOOLS]
    assert a.content[0].text.startswith("scripted observation") and a.meta["lwm/source"] == "sim"
    assert b1.meta["lwm/session"] == b2.meta["lwm/session"] != a.meta["lwm/session"]
    assert "only-in-b" in sent[-1] and not any("only-in-a" in s for s in sent[1:])  # the histories never mix
    recorded = sorted(read_trajectories(tmp_path / "s"), key=lambda t: len(t.turns))
    assert [len(t.turns) for t in recorded] == [1, 2]  # each session recorded when the server closed
    assert recorded[1].turns[0].observation.metadata["source"] == "sim"
    assert recorded[1].context.tools == TOOLS  # the mirrored tools reach the world model's context


def test_a_malformed_request_is_a_protocol_error_and_the_server_goes_on():
    mirror = MirrorServer(ServeConfig(domain="mcp", model="mock"), TOOLS)
    with served(mirror) as server:
        url = f"{server.url}/mcp"
        bad = httpx.post(url, content=b"{not json", headers={"content-type": "application/json",
                                                              "accept": "application/json, text/event-stream"})
        assert 400 <= bad.status_code < 500
        _, (answer,) = asyncio.run(over_http(url, [("lookup", {"key": "k"})]))
    mirror.close()
    assert answer.content[0].text.startswith("mock observation")


@needs_sandbox
def test_stdio_mirror_of_a_real_server_lists_its_tools_and_simulates_them(tmp_path):
    real_tools = mirrored_tools(real_options("time"))

    async def run() -> tuple[list, list]:
        params = StdioServerParameters(command=LWM, args=["serve", "mcp", "--mirror", "time", "--model", "mock",
                                                          "--store", str(tmp_path / "s")])
        async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            listed = (await session.list_tools()).tools
            return listed, await _calls(session, [("get_current_time", {"timezone": "UTC"})])

    listed, (answer,) = asyncio.run(run())
    assert [t.name for t in listed] == [t["name"] for t in real_tools]
    assert [t.input_schema for t in listed] == [t["inputSchema"] for t in real_tools]
    assert answer.meta["lwm/source"] == "sim" and answer.content[0].text.startswith("mock observation")
    (recorded,) = read_trajectories(tmp_path / "s")
    assert recorded.provenance.extra["served"] == "mcp" and recorded.provenance.extra["mode"] == "sim"


@needs_sandbox
def test_real_then_replay_then_cache_real_sim(tmp_path):
    utc = ("get_current_time", {"timezone": "UTC"})
    tokyo = ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
    tools = mirrored_tools(real_options("time"))

    def serve(mode: str, calls: list, **kw) -> list:
        config = ServeConfig(domain="mcp", model=kw.pop("model", None), mode=mode, store=kw.pop("store", None))
        mirror = MirrorServer(config, tools, **kw)
        with served(mirror) as server:
            _, answers = asyncio.run(over_http(f"{server.url}/mcp", calls))
        mirror.close()
        return answers

    (real,) = serve("real", [utc], real=real_options("time"), store=tmp_path / "real")
    assert real.meta["lwm/source"] == "real" and '"timezone": "UTC"' in real.content[0].text
    replay = load_replay([tmp_path / "real"])
    again, unknown = serve("replay", [utc, tokyo], replay=replay)
    assert again.content[0].text == real.content[0].text and again.meta["lwm/source"] == "replay"
    assert unknown.is_error and "no recorded answer" in unknown.content[0].text
    (fallen,) = serve("replay", [tokyo], replay=replay, model="mock")
    assert fallen.meta["lwm/source"] == "sim"
    cached, fresh = serve("cache-real-sim", [utc, tokyo], replay=replay, real=real_options("time"), model="mock")
    assert cached.meta["lwm/source"] == "replay" and fresh.meta["lwm/source"] == "real"
    assert "21:00" in fresh.content[0].text


def test_an_agent_frameworks_mcp_client_uses_the_mirror_unchanged():
    """pydantic-ai's MCPToolset (FastMCP's client) against the mirror; the policy is a scripted function."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    shown: list[str] = []

    def policy(messages, info):
        shown[:] = [tool.name for tool in info.function_tools]
        returns = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
        if not returns:
            return ModelResponse(parts=[ToolCallPart("lookup", {"key": "k1"})])
        return ModelResponse(parts=[TextPart(f"the tool said: {returns[-1].content}")])

    mirror = MirrorServer(ServeConfig(domain="mcp", model="mock"), TOOLS)
    with served(mirror) as server:
        result = Agent(FunctionModel(policy), toolsets=[MCPToolset(f"{server.url}/mcp")]).run_sync("look up k1")
    mirror.close()
    assert shown == ["lookup"] and result.output.startswith("the tool said: mock observation")


def test_one_stdio_connection_is_one_session_for_every_call(tmp_path):
    """The SDK makes a new session object per request: 120 calls on one stdio connection are still one history."""
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))

    async def run() -> list:
        params = StdioServerParameters(command=LWM, args=["serve", "mcp", "--tools", str(tools), "--model", "mock",
                                                          "--max-sessions", "2", "--store", str(tmp_path / "s")])
        async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            return await _calls(session, [("lookup", {"key": f"k{i}"}) for i in range(120)])

    answers = asyncio.run(run())
    assert not any(a.is_error for a in answers)  # none refused as "all sessions in use"
    assert len({a.meta["lwm/session"] for a in answers}) == 1
    recorded = list(read_trajectories(tmp_path / "s"))
    assert [len(t.turns) for t in recorded] == [120]  # one episode: it was cut every 50 calls


@needs_sandbox
def test_a_real_mirror_over_stdio_keeps_the_servers_state_between_calls(tmp_path):
    entity = {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}

    async def run() -> list:
        params = StdioServerParameters(command=LWM, args=["serve", "mcp", "--mirror", "memory", "--mode", "real"])
        async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            return await _calls(session, [("create_entities", {"entities": [entity]}),
                                          *[("search_nodes", {"query": f"q{i}"}) for i in range(55)],
                                          ("read_graph", {})])

    created, *_, graph = asyncio.run(run())
    # past call 50 too: the mirror once restarted the real server (its state gone) every 50 calls
    assert not created.is_error and "wrote the first program" in graph.content[0].text


def test_the_simulated_mirror_refuses_calls_the_real_server_would_refuse():
    mirror = MirrorServer(ServeConfig(domain="mcp", model="mock"), TOOLS)
    with served(mirror) as server:
        _, (unknown, missing, wrong, fine) = asyncio.run(over_http(f"{server.url}/mcp", [
            ("nosuch", {}), ("lookup", {}), ("lookup", {"key": 7}), ("lookup", {"key": "k"})]))
    mirror.close()
    assert unknown.is_error and unknown.content[0].text == "Unknown tool: nosuch"
    assert missing.is_error and "'key' is a required property" in missing.content[0].text
    assert wrong.is_error and "key: 7 is not of type 'string'" in wrong.content[0].text
    assert not fine.is_error and fine.content[0].text.startswith("mock observation")


def test_an_unknown_mirror_is_one_line_naming_the_presets():
    from typer.testing import CliRunner

    from lwm.cli import app

    result = CliRunner().invoke(app, ["serve", "mcp", "--mirror", "nosuch", "--model", "mock"])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0 and "not a preset (memory" in result.output
    assert "bwrap" not in result.output


def test_sessions_open_when_the_server_is_stopped_are_recorded(tmp_path):
    """uvicorn raises SIGTERM again after its graceful shutdown: the open sessions were lost with the process."""
    import signal
    import socket
    import subprocess
    import time

    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([LWM, "serve", "mcp", "--tools", str(tools), "--model", "mock", "--transport", "http",
                               "--port", str(port), "--store", str(tmp_path / "s")], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and server.poll() is None, "the server did not start"
                time.sleep(0.2)
        _, answers = asyncio.run(over_http(f"http://127.0.0.1:{port}/mcp", [("lookup", {"key": "kept"})] * 2))
        # the client's session is still open (over_http left it; the idle timeout is far off) when the server stops
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    finally:
        server.kill()
    (recorded,) = read_trajectories(tmp_path / "s")
    assert len(recorded.turns) == 2 and recorded.provenance.extra["session"] == answers[0].meta["lwm/session"]


def test_the_modes_rules_live_once_and_the_cli_says_what_a_mode_lacks(tmp_path):
    from typer.testing import CliRunner

    from lwm.cli import app
    from lwm.serve.mirror import MirrorEnv, MirrorMode

    assert MirrorMode("replay", fall_through=True).simulates and not MirrorMode("replay").simulates
    assert MirrorMode("cache-real-sim").uses_real and MirrorMode("cache-real-sim").needs_replay
    with pytest.raises(ValueError, match="give --replay"):
        MirrorEnv("replay", TOOLS)
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    for args, says in [(["--mode", "nope"], "unknown --mode 'nope'"), (["--mode", "replay"], "give --replay"),
                       (["--mode", "real"], "give --mirror")]:
        result = CliRunner().invoke(app, ["serve", "mcp", "--tools", str(tools), "--model", "mock", *args])
        assert result.exit_code == 2 and says in result.output, (args, result.output)


@needs_sandbox
@pytest.mark.parametrize("mode", ["sim", "real"])
def test_random_tool_calls_each_get_a_result_and_the_session_is_recorded_once(mode, tmp_path):
    """A seeded fuzz of the MCP face over streamable HTTP (``lwm.testing.fuzz``), simulated and in front of the
    real memory server: every call answered with a result (``is_error`` where refused), none an exception."""
    import os
    import random

    from lwm.testing import fuzz
    from lwm.types import well_formed

    rng = random.Random(f"{os.environ.get('LWM_FUZZ_SEED', '0')}-mcp-{mode}")
    options = real_options("memory")
    tools = mirrored_tools(options)
    calls = []
    for _ in range(int(os.environ.get("LWM_FUZZ_STEPS", "30"))):
        call = fuzz.tool_call(rng, tools)
        arguments = call.get("arguments") if isinstance(call, dict) else None
        # the client sends a tool name and an object of arguments: the rest of the fuzz is in their contents
        calls.append((str(call.get("name")) if isinstance(call, dict) else fuzz.text(rng, 2),
                      arguments if isinstance(arguments, dict) else {"value": call}))
    # what the mcp client can send: strict JSON of well-formed text (it cannot encode a lone surrogate)
    calls = [(well_formed(name), well_formed(json.loads(json.dumps(args, default=str).replace("NaN", "null")
                                                        .replace("Infinity", "1e308")))) for name, args in calls]
    config = ServeConfig(domain="mcp", model=None if mode == "real" else "mock", mode=mode, store=tmp_path / "s")
    mirror = MirrorServer(config, tools, real=options if mode == "real" else None)
    with served(mirror) as server:
        _, answers = asyncio.run(over_http(f"{server.url}/mcp", calls))
    mirror.close()
    assert len(answers) == len(calls) and all(a.content for a in answers)
    assert not any(a.content[0].text.startswith("Error: ValueError") for a in answers)  # no failure of lwm's own
    (recorded,) = read_trajectories(tmp_path / "s")
    refused = sum(a.content[0].text.startswith("Error: invalid action") for a in answers)  # not a turn
    assert len(recorded.turns) == len(calls) - refused
