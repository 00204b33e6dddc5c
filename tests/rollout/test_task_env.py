"""A suite's task as a Gymnasium environment (``lwm/Task-v0``): the task's checker is the reward of a plain
``step`` loop, in the real environment and in the simulator, the same as ``lwm agent`` gives."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

import lwm  # noqa: F401 - registers the ids
from lwm.agent.policy import ExpertPolicy, expert_replies
from lwm.backends import MockBackend
from lwm.data import TrajectoryStore
from lwm.rollout.checks import check, final_answer
from lwm.rollout.loop import run_episodes
from lwm.rollout.tasks import get_task, tasks
from lwm.worldmodel import WorldModel
from tests.envs.real.conftest import needs_sandbox, needs_tmux


def _action(reply: str) -> str:
    return reply.removeprefix("```json\n").removesuffix("\n```")


@needs_sandbox
@needs_tmux
@pytest.mark.parametrize("task_id", ["mcp/memory-relation-0000", "terminal/find-file-0000", "search/syscall-0004"])
def test_the_experts_actions_through_gym_make_earn_the_loops_reward(tmp_path, task_id):
    task = get_task(task_id)
    env = gym.make("lwm/Task-v0", task=task_id, mode="real", store=tmp_path)
    observation, info = env.reset(seed=0)
    assert info["task"] == task_id
    *steps, answer = [_action(reply) for reply in expert_replies(task)]
    for action in steps:
        observation, reward, terminated, truncated, _ = env.step(action)
        assert reward == 0.0 and not terminated
    observation, reward, terminated, truncated, info = env.step(answer)
    env.close()
    [episode] = run_episodes([task], ExpertPolicy(), "real")
    assert (reward, terminated, truncated) == (episode.reward, True, False) == (1.0, True, False)
    assert info["answer"] == final_answer(answer) and observation == "Episode finished: reward 1.000"
    if task.check.kind == "state":
        assert info["check_observation"] == episode.check_observation


def test_a_wrong_answer_in_the_simulator_scores_what_the_checker_says():
    task = get_task("search/syscall-0004")
    env = gym.make("lwm/Task-v0", task=task, mode="sim", world_model=WorldModel(MockBackend(), cache=False))
    env.reset(seed=0)
    env.step(json.dumps({"name": "web_search", "arguments": {"query": "x"}}))
    _, reward, terminated, _, info = env.step({"name": "final_answer", "arguments": {"answer": "no table"}})
    assert terminated and reward == 0.0 and info["answer"] == "no table"


def test_an_observed_check_reads_the_first_observation_too():
    """A fictional lookup answered from the page its first search showed (a served session once skipped the
    first observation when it read what the agent was shown)."""
    task = tasks("search", families=["syscall-fictional"])[0]
    name = task.check.gold[0][task.check.columns[0]]
    page = f"1. [{name}(2) — pin pages of a fence](https://man7.org/x)"
    answer = f"| Call | Summary |\n|---|---|\n| {name} | pin pages of a fence |"
    assert check(task, answer, ["(start page)", page], env=None)[0] == 1.0
    assert check(task, answer, ["(start page)"], env=None)[0] == 0.0
    sim = WorldModel(MockBackend([f"<predicted_observation>{page}</predicted_observation>"]), cache=False)
    env = gym.make("lwm/Task-v0", task=task, mode="sim", world_model=sim)
    env.reset(seed=0)
    env.step(json.dumps({"name": "web_search", "arguments": {"query": f"{name} system call"}}))
    assert env.step({"name": "final_answer", "arguments": {"answer": answer}})[1] == 1.0


@needs_sandbox
@needs_tmux
def test_a_terminal_tasks_home_is_removed_when_the_env_closes():
    env = gym.make("lwm/Task-v0", task="terminal/count-lines-0000", mode="real")
    env.reset(seed=0)
    home = Path(env.unwrapped._task_home)
    assert home.is_dir() and any(home.iterdir())  # the task's files
    env.close()
    assert not home.exists()


@needs_sandbox
def test_the_loop_perturbs_every_episode_its_own_way_and_checks_the_state_unperturbed(tmp_path):
    """``control`` in the real MCP server: every call of the expert fails by injection, so nothing is written
    and the state check (not perturbed) reads the real, empty graph; each episode has a perturbation seed of
    its own."""
    spec = tmp_path / "faults.yaml"
    spec.write_text("perturbations:\n  - error: {rate: 1.0, kinds: [server_error]}\n")
    chosen = tasks("mcp", "train", ["memory-entity"])[:2]
    store = TrajectoryStore(tmp_path / "store")
    faulty = run_episodes(chosen, ExpertPolicy(), "real", control=spec, store=store)
    clean = run_episodes(chosen, ExpertPolicy(), "real")
    assert [e.reward for e in clean] == [1.0, 1.0] and [e.reward for e in faulty] == [0.0, 0.0]
    assert all(e.error is None and "error" not in (e.check_observation or "").lower()[:40] for e in faulty)
    recorded = list(store)
    assert all(t.provenance.extra["control"]["perturbations"][0]["error"]["rate"] == 1.0 for t in recorded)
    assert len({t.provenance.extra["control_seed"] for t in recorded}) == 2
    assert all("error" in t.turns[0].observation.content.lower() for t in recorded)


def test_agent_eval_takes_a_control_spec_pins_it_and_refuses_a_broken_one(tmp_path):
    from typer.testing import CliRunner

    from lwm.cli import app

    runner = CliRunner()
    spec = tmp_path / "faults.yaml"
    spec.write_text("perturbations:\n  - empty: 0.5\n")
    args = ["agent", "eval", "--domain", "search", "--mode", "sim", "--world-model", "mock", "--limit", "2",
            "--out", str(tmp_path / "eval")]
    done = runner.invoke(app, [*args, "--control", str(spec)])
    assert done.exit_code == 0, done.output
    again = runner.invoke(app, args)  # the same folder without the spec: another experiment
    assert again.exit_code == 2 and "control" in again.output
    (tmp_path / "broken.yaml").write_text("perturbations:\n  - error: {rate: 7}\n")
    broken = runner.invoke(app, [*args[:-1], str(tmp_path / "other"), "--control", str(tmp_path / "broken.yaml")])
    assert broken.exit_code == 2 and "rate" in broken.output


def test_a_task_env_takes_a_render_mode_and_passes_gymnasiums_checker():
    from gymnasium.utils.env_checker import check_env

    env = gym.make("lwm/Task-v0", task="search/syscall-0004", mode="sim", render_mode="ansi",
                   world_model=WorldModel(MockBackend(), cache=False))
    check_env(env.unwrapped, skip_render_check=False)
    env.reset(seed=0)
    assert env.render() == env.unwrapped.render() and env.render() is not None
