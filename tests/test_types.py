import json

import pytest

from lwm.types import Action, Context, Observation, Trajectory, load_context
from tests.samples import trajectory


def test_trajectory_round_trips_through_json(tmp_path):
    original = trajectory("mcp", tools=[{"name": "read_graph", "inputSchema": {"type": "object"}}], task="t")
    path = tmp_path / "t.json"
    original.save(path)
    loaded = Trajectory.load(path)
    assert loaded == original
    assert loaded.turns[0].action.content["name"] == "create_entities"


def test_extended_leaves_the_original_alone():
    t = trajectory("terminal", 1)
    longer = t.extended(Action(content=[{"keystrokes": "pwd\n", "duration": 0.1}]), Observation(content="/home"))
    assert len(t.turns) == 1 and len(longer.turns) == 2


def test_malformed_trajectory_file_names_the_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"domain": "terminal", "turns": [1, 2]}')
    with pytest.raises(ValueError, match="bad.json"):
        Trajectory.load(path)


@pytest.mark.parametrize(
    "payload, check",
    [
        ([{"name": "t"}], lambda c: c.tools == [{"name": "t"}]),
        ({"tools": [{"name": "t"}]}, lambda c: c.tools[0]["name"] == "t"),
        ({"task": "x", "initial_state": "$ "}, lambda c: c.task == "x" and c.initial_state == "$ "),
        ({"domain": "mcp", "context": {"task": "y"}, "turns": []}, lambda c: c.task == "y"),
    ],
)
def test_load_context_accepts_the_usual_shapes(tmp_path, payload, check):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(payload))
    assert check(load_context(path))


def test_load_context_rejects_garbage(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("{nope")
    with pytest.raises(ValueError, match="c.json"):
        load_context(path)
    path.write_text('{"tools": "not a list", "task": 1}')
    with pytest.raises(ValueError, match="not a valid context"):
        load_context(path)


def test_context_model_is_plain_data():
    assert Context().model_dump()["tools"] == []
