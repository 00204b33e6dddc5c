"""Every face that builds a world model honours every model flag: the options a command is given are the
options its world model is built with (``lwm.world_model``), for each command and the Gymnasium ids."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from typer.testing import CliRunner

import lwm
from lwm.cli import app
from lwm.model_options import ModelOptions

FLAGS = ["-m", "mock", "--max-tokens", "77", "--temperature", "0.3", "--no-edits", "--no-retrieve", "--examples",
         "1", "--examples-when", "no-base", "--guard"]
ASKED = {"model": "mock", "max_tokens": 77, "temperature": 0.3, "edits": False, "no_retrieve": True, "examples": 1,
         "examples_when": "no-base", "guard": True}


class Built(Exception):
    """Raised where the world model would be built: the command has shown what it asks for."""


@pytest.fixture
def built(monkeypatch) -> list[ModelOptions]:
    seen: list[ModelOptions] = []

    def record(self: ModelOptions, concurrency: int | None = None) -> None:
        seen.append(self)
        raise Built

    monkeypatch.setattr(ModelOptions, "world_model", record)
    return seen


def tools_file(tmp_path):
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([{"name": "get_time", "description": "The time.", "inputSchema": {"type": "object"}}]))
    return str(path)


@pytest.mark.parametrize("command", [
    ["simulate", "--domain", "terminal", "--action", '[{"keystrokes": "ls\\n"}]'],
    ["shell", "--domain", "terminal"],
    ["serve", "openenv", "--domain", "terminal"],
    ["serve", "mcp", "--tools", "TOOLS"],
    ["bench", "run", "--data", "data/bench-sample", "--limit", "1", "--judge", "rules", "--out", "OUT"],
], ids=lambda c: " ".join(c[:2]))
def test_each_command_builds_its_world_model_with_every_flag_it_was_given(command, built, tmp_path):
    command = [tools_file(tmp_path) if a == "TOOLS" else str(tmp_path / "out") if a == "OUT" else a for a in command]
    CliRunner().invoke(app, [*command, *FLAGS])
    assert built, "the command built no world model"
    asked = built[0]
    assert {name: getattr(asked, name) for name in ASKED} == ASKED


def test_the_gym_ids_and_the_agents_simulator_pass_their_settings_through_the_one_factory(built):
    with pytest.raises(Built):
        gym.make("lwm/Terminal-v0", model="mock", max_tokens=77, temperature=0.3)
    with pytest.raises(Built):
        lwm.world_model("mock", max_tokens=77, temperature=0.3)
    assert [(o.model, o.max_tokens, o.temperature) for o in built] == [("mock", 77, 0.3)] * 2
    CliRunner().invoke(app, ["agent", "eval", "--domain", "terminal", "--mode", "sim", "--world-model", "mock",
                             "--world-model-tokens", "77", "--limit", "1",
                             "--world-model-retrieve", "data/samples/corpus-v1-sample.jsonl"])
    assert (built[-1].model, built[-1].max_tokens) == ("mock", 77)
    assert [p.name for p in built[-1].retrieve] == ["corpus-v1-sample.jsonl"]


def test_a_ready_world_model_takes_no_options():
    ready = lwm.world_model("mock")
    assert lwm.world_model(ready) is ready
    with pytest.raises(ValueError, match="takes no options"):
        lwm.world_model(ready, max_tokens=5)
