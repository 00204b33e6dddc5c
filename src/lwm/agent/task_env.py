"""A task as a Gymnasium environment: ``gymnasium.make("lwm/Task-v0", task="mcp/memory-entity-0000",
env="real")`` (or ``env="sim"`` with a world model) gives the task's environment with the task's checker as its
reward, so any RL library's ``step`` loop gets the same reward as ``lwm agent``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym

from lwm.agent.checks import check, final_answer
from lwm.agent.loop import WORLD_MODEL_TOKENS, EnvKind, close_env, make_env, sim_world_model
from lwm.agent.tasks import Task, get_task
from lwm.backends import DEFAULT_SPEC
from lwm.envs.control import ControlSpec
from lwm.envs.registration import wrap
from lwm.worldmodel import WorldModel


class TaskEnv(gym.Wrapper):
    """A task's environment whose reward is the task's checker: a ``final_answer`` call ends the episode with
    the checker's reward (info: ``answer``, ``task``, and for state checks ``check_observation``); any other
    action steps the environment. The final answer is not stepped into the environment."""

    def __init__(self, env: gym.Env, task: Task):
        super().__init__(env)
        self.task = task
        self.shown: list[str] = []

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        self.shown = [observation]
        return observation, {**info, "task": self.task.id}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        answer = final_answer(action)
        if answer is None:
            observation, reward, terminated, truncated, info = self.env.step(action)
            self.shown.append(observation)
            return observation, reward, terminated, truncated, info
        value, seen = check(self.task, answer, self.shown, self.env)
        info = {"answer": answer, "task": self.task.id, **({"check_observation": seen} if seen is not None else {})}
        return f"Episode finished: reward {value:.3f}", value, True, False, info

    def close(self) -> None:
        close_env(self.env)


def make_task_env(task: str | Task, env: EnvKind = "real", model: str = DEFAULT_SPEC, *,
                  world_model: WorldModel | None = None, max_tokens: int = WORLD_MODEL_TOKENS,
                  store: str | Path | None = None, max_turns: int | None = None,
                  control: ControlSpec | str | Path | None = None) -> TaskEnv:
    """``task`` (an id or a Task) in the real environment or the simulator (``model`` or ``world_model``
    playing it), recorded into ``store``, truncated after ``max_turns``, perturbed by ``control``."""
    task = get_task(task) if isinstance(task, str) else task
    if env == "sim" and world_model is None:
        world_model = sim_world_model(model, max_tokens)
    return TaskEnv(wrap(make_env(task, env, world_model), store, max_turns, control), task)
