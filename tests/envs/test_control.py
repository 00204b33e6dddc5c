"""Control specs: injected rates land within tolerance, decisions repeat by seed, bibles reach the prompt."""

import json

import gymnasium as gym
import pytest
from typer.testing import CliRunner

import lwm  # noqa: F401 - registers the ids
from lwm.backends import MockBackend
from lwm.cli import app
from lwm.envs.control import Control, ControlSpec, apply_control
from lwm.envs.sim import SimEnv
from lwm.testing.openai_server import ScriptedServer
from lwm.types import Action, Observation
from lwm.worldmodel import WorldModel

CALL = '{"name": "lookup", "arguments": {"key": "k"}}'


def sim(answer: str = "<predicted_observation>plain answer text</predicted_observation>") -> SimEnv:
    return SimEnv(WorldModel(MockBackend([answer]), cache=False), "mcp")


def run(env, steps: int, seed: int = 0) -> list[dict]:
    env.reset(seed=seed)
    out = []
    for _ in range(steps):
        obs, _, _, _, info = env.step(CALL)
        out.append({"obs": obs, "perturbations": env.unwrapped.trajectory.turns[-1].observation.metadata.get(
            "perturbations", [])})
    return out


def test_injected_rates_land_within_tolerance():
    spec = ControlSpec.model_validate({"seed": 3, "perturbations": [
        {"error": {"rate": 0.2, "kinds": ["timeout", "server_error"]}, "empty": 0.1}]})
    steps = run(apply_control(sim(), spec), 2000)
    errors = [s for s in steps if any(p.startswith("error:") for p in s["perturbations"])]
    empties = [s for s in steps if "empty" in s["perturbations"]]
    assert abs(len(errors) / 2000 - 0.2) < 0.03
    assert abs(len(empties) / (2000 - len(errors)) - 0.1) < 0.03  # empty applies to the calls that got through
    assert {s["obs"] for s in errors} == {"Error: the request timed out", "Error: internal server error (500)"}
    assert all(s["obs"] == "" for s in empties)


def test_the_same_seed_gives_the_same_perturbations_and_another_does_not():
    spec = ControlSpec.model_validate({"perturbations": [{"error": {"rate": 0.5}}]})
    first, again = run(apply_control(sim(), spec), 40, seed=1), run(apply_control(sim(), spec), 40, seed=1)
    other = run(apply_control(sim(), spec), 40, seed=2)
    assert first == again and first != other


def test_tool_globs_truncation_drift_and_rate_limits():
    answer = '<predicted_observation>{"price": 3, "items": [{"price": 1}]}</predicted_observation>'
    spec = ControlSpec.model_validate({"perturbations": [
        {"tools": ["look*"], "drift": {"rename": {"price": "cost"}, "extra": {"currency": "EUR"}}},
        {"tools": ["other"], "error": {"rate": 1.0}}]})
    (step,) = run(apply_control(sim(answer), spec), 1)
    assert json.loads(step["obs"]) == {"cost": 3, "items": [{"cost": 1}], "currency": "EUR"}
    assert step["perturbations"] == ["drift"]

    now = [0.0]
    limited = Control(ControlSpec.model_validate({"perturbations": [
        {"rate_limit": {"calls": 2, "per_seconds": 10}, "truncate": {"rate": 1.0, "keep": 5}}]}), clock=lambda: now[0])
    answer_of = lambda a: Observation(content="0123456789")  # noqa: E731
    texts = [limited.step(Action(content={"name": "x"}), t, answer_of).content for t in range(3)]
    now[0] = 11.0  # the window has passed
    texts.append(limited.step(Action(content={"name": "x"}), 3, answer_of).content)
    assert texts == ["01234", "01234", "Error: rate limit exceeded (429): too many requests, retry later", "01234"]


def test_latency_is_added_before_the_call():
    slept: list[float] = []
    control = Control(ControlSpec.model_validate({"perturbations": [{"latency": {"seconds": 0.5, "jitter": 0.1}}]}),
                      sleep=slept.append)
    control.step(Action(content={"name": "x"}), 1, lambda a: Observation(content="ok"))
    assert len(slept) == 1 and 0.5 <= slept[0] <= 0.6


def test_bible_facts_reach_the_world_models_prompt(tmp_path):
    spec_file = tmp_path / "world.yaml"
    spec_file.write_text("version: 1\nbible:\n  facts: ['The shop sells exactly three products.']\n"
                         "  entities: {users: [{id: 42, name: alice}]}\n")
    with ScriptedServer() as server:
        env = gym.make("lwm/MCP-v0", model="openai:scripted", base_url=server.base_url, control=spec_file)
        env.reset(seed=0)
        env.step(CALL)
        system = server.requests[0]["messages"][0]["content"]
    assert "The shop sells exactly three products." in system and "name: alice" in system


def test_a_bad_spec_is_one_line_naming_the_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nperturbations:\n  - error: {rate: 2}\n")
    with pytest.raises(ValueError, match=r"bad.yaml: perturbations.0.error.rate"):
        ControlSpec.load(bad)
    result = CliRunner().invoke(app, ["serve", "openenv", "--model", "mock", "--control", str(bad)])
    assert result.exit_code == 2 and result.output.startswith("lwm: error: --control") and "\n" == result.output[-1]
    assert result.output.count("\n") == 1
