"""A task's environment: the task's context played by a world model (``sim``) or the real environment, with the
task's checker as its reward. ``gymnasium.make("lwm/Task-v0", task="mcp/memory-entity-0000", mode="real")`` gives
it to any RL library's ``step`` loop; the agent loop and served task sessions step through the same wrapper, so
there is one place where an episode becomes a reward."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym

from lwm.backends import DEFAULT_SPEC
from lwm.data.store import TrajectoryStore
from lwm.envs import RecordTrajectory, TextEnv
from lwm.envs.control import Control, ControlSpec
from lwm.envs.registration import open_env, wrap
from lwm.model_options import world_model as get_world_model
from lwm.rollout.checks import check, final_answer
from lwm.rollout.tasks import Task, get_task, task_context
from lwm.worldmodel import WorldModel

Mode = Literal["sim", "real"]
"""Who plays the environment: the world model (``sim``) or the real one; the same word as ``lwm serve``'s modes."""
WORLD_MODEL_TOKENS = 512
"""Most tokens the world model writes per simulated observation: the agent loop's policy reads only the first or
last ``lwm.rollout.loop.OBSERVATION_CHARS`` characters of it (~300-400 tokens), so more is time nobody reads."""


def make_env(task: Task, mode: Mode, world_model: WorldModel | None = None,
             render_mode: str | None = None) -> TextEnv:
    """The task's environment: the world model playing it (``sim``) or the real one (``real``)."""
    context = task_context(task)
    if task.files:
        context = context.model_copy(update={"extra": {**context.extra, "files in the home folder": task.files}})
    if mode == "sim":
        if world_model is None:
            raise ValueError("mode sim needs a world model")
        return open_env(task.domain, world_model, context=context, render_mode=render_mode)
    options = dict(task.env_options)
    if task.domain == "terminal":
        home = Path(tempfile.mkdtemp(prefix="lwm-task-"))
        for name, text in task.files.items():
            (home / name).parent.mkdir(parents=True, exist_ok=True)
            (home / name).write_text(text)
        options["workdir"] = home
    real = open_env(task.domain, context=task.context, env_options=options, render_mode=render_mode)
    real._task_home = options.get("workdir")  # removed with the episode (close_env)
    return real


def close_env(env: Any) -> None:
    """Close an episode's environment and remove the home folder a terminal task made for it."""
    try:
        env.close()
    finally:
        home = getattr(env.unwrapped, "_task_home", None)
        if home:
            shutil.rmtree(home, ignore_errors=True)


def recorder(env: gym.Env) -> RecordTrajectory | None:
    """The ``RecordTrajectory`` among ``env``'s wrappers, if any."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, RecordTrajectory):
            return env
        env = env.env
    return None


class TaskEnv(gym.Wrapper):
    """A task's environment whose reward is the task's checker: a ``final_answer`` call ends the episode with
    the checker's reward (info: ``answer``, ``task``, for state checks ``check_observation``, and ``error`` when
    the checker crashed, which gives 0); any other action steps the environment. The final answer is not
    stepped into the environment; a recorder inside stores the episode with its reward and answer.

    The checker reads the observations as the agent saw them: ``view`` maps each one to what was shown (the
    agent loop shows the first or last characters; a Gymnasium user sees them whole)."""

    def __init__(self, env: gym.Env, task: Task, view: Callable[[str], str] | None = None):
        super().__init__(env)
        self.task = task
        self.view = view or (lambda observation: observation)
        self.shown: list[str] = []

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        self.shown = [self.view(observation)]
        return observation, {**info, "task": self.task.id}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        answer = final_answer(action)
        if answer is None:
            observation, reward, terminated, truncated, info = self.env.step(action)
            self.shown.append(self.view(observation))
            return observation, reward, terminated, truncated, info
        info: dict[str, Any] = {"answer": answer, "task": self.task.id}
        try:
            value, seen = check(self.task, answer, self.shown, self.env)
        except Exception as exc:  # noqa: BLE001 - a checker that crashes gives 0, and says so
            value, seen, info["error"] = 0.0, None, f"checker failed: {type(exc).__name__}: {exc}"
        if seen is not None:
            info["check_observation"] = seen
        recorded = recorder(self.env)
        if recorded is not None and recorded.trajectory is not None:
            recorded.finish({"reward": value, "answer": answer, "error": info.get("error")})
        return f"Episode finished: reward {value:.3f}", value, True, False, info

    def close(self) -> None:
        close_env(self.env)


def make_task_env(task: str | Task, mode: Mode = "real", model: str = DEFAULT_SPEC, *,
                  world_model: WorldModel | None = None, max_tokens: int = WORLD_MODEL_TOKENS,
                  store: str | Path | TrajectoryStore | None = None, max_turns: int | None = None,
                  control: Control | ControlSpec | str | Path | None = None, record: bool = False,
                  provenance: dict[str, Any] | None = None, view: Callable[[str], str] | None = None,
                  render_mode: str | None = None) -> TaskEnv:
    """``task`` (an id or a Task) in the real environment or the simulator (``model`` or ``world_model``
    playing it), recorded into ``store`` (or in memory with ``record``), truncated after ``max_turns``,
    perturbed by ``control``; ``render_mode`` ``"ansi"`` renders the last observation (Gymnasium's)."""
    task = get_task(task) if isinstance(task, str) else task
    if mode == "sim" and world_model is None:
        world_model = get_world_model(model, max_tokens=max_tokens)
    return TaskEnv(wrap(make_env(task, mode, world_model, render_mode), store, max_turns, control, record=record,
                        provenance=provenance), task, view)
