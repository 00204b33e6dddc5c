"""Control specs checked from the client of each face: 2,000 calls, episodes of 50 steps one after the other;
the configured rates land within ±0.03 and the faults never repeat with a period shorter than the run (each
episode draws its own perturbation seed from the run's seed and its index)."""

import asyncio
import json
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import lwm  # noqa: F401 - registers the ids
from lwm.data import read_trajectories
from lwm.envs.control import ControlSpec

CALLS, EPISODE = 2000, 50
SPEC = {"seed": 7, "perturbations": [{"error": {"rate": 0.2, "kinds": ["timeout", "server_error"]}, "empty": 0.1}]}
ERROR_TEXTS = {"Error: the request timed out", "Error: internal server error (500)"}
TOOLS = [{"name": "lookup", "description": "Find a record by key",
          "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}}}]
LWM = str(Path(sys.executable).parent / "lwm")


def check_faults(texts: list[str]) -> None:
    """Rates within ±0.03 (empties among the calls that got through) and no period shorter than the run."""
    assert len(texts) == CALLS
    kinds = ["error" if t in ERROR_TEXTS else "empty" if t == "" else "ok" for t in texts]
    errors, empties = kinds.count("error"), kinds.count("empty")
    assert abs(errors / CALLS - 0.2) < 0.03, errors
    assert abs(empties / (CALLS - errors) - 0.1) < 0.03, empties
    periods = [p for p in range(1, CALLS // 2 + 1) if kinds[:-p] == kinds[p:]]
    assert periods == [], f"the faults repeat every {periods[0]} calls"


def _text(result) -> str:
    return result.content[0].text if result.content else ""


def spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(SPEC))
    return path


def test_gymnasium_episodes_after_the_first_draw_their_own_faults(tmp_path):
    env = gym.make("lwm/MCP-v0", model="mock", control=spec_file(tmp_path), max_turns=EPISODE)
    texts, seeds = [], []
    env.reset(seed=3)
    while len(texts) < CALLS:
        obs, _, terminated, truncated, _ = env.step('{"name": "lookup", "arguments": {"key": "k"}}')
        texts.append(obs)
        if terminated or truncated:
            seeds.append(env.unwrapped.trajectory.provenance.extra["control_seed"])
            env.reset()  # no seed: the run's next episode
    check_faults(texts)
    assert len(set(seeds)) == len(seeds) == CALLS // EPISODE  # each episode's seed is its own, and recorded


def test_mcp_stdio_through_the_mcp_client(tmp_path):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))

    async def run() -> list[str]:
        params = StdioServerParameters(command=LWM, args=[
            "serve", "mcp", "--tools", str(tools), "--model", "mock", "--control", str(spec_file(tmp_path)),
            "--store", str(tmp_path / "s")])  # one MCP session is one episode, however long
        async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            return [_text(await session.call_tool("lookup", {"key": "k"})) for _ in range(CALLS)]

    texts = asyncio.run(run())
    check_faults(texts)
    (recorded,) = read_trajectories(tmp_path / "s")
    assert len(recorded.turns) == CALLS and "control_seed" in recorded.provenance.extra


def test_mcp_http_through_the_mcp_client():
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from lwm.serve.mcp import MirrorServer
    from lwm.serve.session import ServeConfig
    from lwm.testing.asgi import ThreadedServer

    config = ServeConfig(domain="mcp", model="mock", control=ControlSpec.model_validate(SPEC))
    mirror = MirrorServer(config, TOOLS)

    async def run(url: str) -> list[str]:
        async with streamable_http_client(f"{url}/mcp") as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            return [_text(await session.call_tool("lookup", {"key": "k"})) for _ in range(CALLS)]

    with ThreadedServer(mirror.http_app(), lifespan="on") as server:
        texts = asyncio.run(run(server.url))
    mirror.close()
    check_faults(texts)


def test_openenv_through_openenvs_client():
    pytest.importorskip("openenv.core")
    from openenv.core import GenericEnvClient

    from lwm.serve.openenv import openenv_app
    from lwm.serve.session import ServeConfig
    from lwm.testing.asgi import ThreadedServer

    config = ServeConfig(domain="mcp", model="mock", control=ControlSpec.model_validate(SPEC), max_turns=EPISODE)
    texts = []
    with ThreadedServer(openenv_app(config)) as server, GenericEnvClient(base_url=server.url).sync() as env:
        env.reset()
        while len(texts) < CALLS:
            result = env.step({"action": {"name": "lookup", "arguments": {"key": "k"}}})
            texts.append(result.observation["text"])
            if result.done:
                env.reset()
    check_faults(texts)
