"""The session core: bounded, idle sessions expire (and are recorded), episodes truncate at max_turns."""

import time

import gymnasium as gym
import pytest

from lwm.data import read_trajectories
from lwm.serve.session import ServeConfig, Session, Sessions

LS = [{"keystrokes": "ls\n"}]


def test_sessions_are_bounded_and_idle_ones_expire_and_are_recorded(tmp_path):
    sessions = Sessions(ServeConfig(domain="terminal", model="mock", store=tmp_path / "s"), "test",
                        max_sessions=2, idle_seconds=0.2)
    a = sessions.get("a")
    a.reset()
    a.step(LS)
    assert sessions.get("a") is a
    sessions.get("b")
    with pytest.raises(RuntimeError, match="all 2 sessions are in use"):
        sessions.get("c")
    for idle in (a, sessions.get("b")):  # both idle for longer than idle_seconds (no sleeping: their clocks moved)
        idle.last_used = time.monotonic() - 1.0
    assert sessions.get("c") is not a and len(sessions) == 1  # a and b expired
    assert [len(t.turns) for t in read_trajectories(tmp_path / "s")] == [1]  # a's unfinished episode was kept
    sessions.close()


def test_an_episode_is_truncated_at_max_turns_and_must_be_reset():
    session = Session(ServeConfig(domain="terminal", model="mock", max_turns=2), None, "test")
    with pytest.raises(gym.error.ResetNeeded):
        session.step(LS)
    session.world_model = ServeConfig(domain="terminal", model="mock").world_model()
    session.reset(seed=0)
    assert not session.step(LS).truncated
    assert session.step(LS).truncated and session.done
    with pytest.raises(gym.error.ResetNeeded, match="ended"):
        session.step(LS)
    with pytest.raises(ValueError, match="is a search task"):
        session.reset(task="search/syscall-0000")


def test_a_bad_reset_leaves_the_episode_in_progress_going():
    from lwm.rollout.tasks import UnknownTaskError

    session = Session(ServeConfig(domain="terminal", model="mock"), None, "test")
    session.world_model = ServeConfig(domain="terminal", model="mock").world_model()
    session.reset(seed=0)
    session.step(LS)
    for bad in ({"task": "nope/x"}, {"task": "search/syscall-0000"}, {"context": {"tools": 5}}):
        with pytest.raises((ValueError, UnknownTaskError)):
            session.reset(**bad)
    assert session.step(LS).observation.startswith("mock observation") and session.steps == 2


def test_served_models_are_asked_as_the_cli_says_edits_retrieval_and_examples_included():
    """`lwm serve openenv|mcp` once accepted --no-edits, --retrieve, --no-retrieve and --examples and dropped them."""
    from lwm.cli.serve import _config
    from lwm.model_options import ModelOptions

    config = _config(ModelOptions("mock", edits=True, no_retrieve=True, examples=3, examples_when="no-base"), None,
                     domain="terminal")
    assert config.model == ModelOptions("mock", edits=True, no_retrieve=True, examples=3, examples_when="no-base")
    wm = config.world_model()
    assert wm.edits is True and wm.examples == 3 and wm.examples_when == "no-base" and not wm.retriever


def test_a_tasks_reset_tells_any_client_the_task_and_how_to_act():
    session = Session(ServeConfig(domain="search", model="copy-last"), None, "test")
    session.world_model = ServeConfig(domain="search", model="copy-last").world_model()
    info = session.reset(task="search/signal-0000").info
    assert info["instruction"].startswith("Fill in a table") and info["task"] == "search/signal-0000"
    assert info["instruction"] in info["prompt"] and '"name": "final_answer"' in info["prompt"]
    assert "instruction" not in session.reset(seed=0).info  # an episode without a task has none
