"""The one simulator core every face serves (OpenEnv, Gymnasium, MCP): a session is one client's episode.

A session owns an lwm environment — the world model playing the domain (``SimEnv``), or the real one —
wrapped in ``RecordTrajectory`` so that every served episode lands in the trajectory store as it runs,
with the model, the mode and the face that served it. History and prompts are the environment's and
the ``WorldModel``'s (oldest turns dropped to fit the window), never the face's. With a task
(``reset(task="search/syscall-0007")``) the session starts from the task's context and a
``final_answer`` action ends the episode with the task checker's reward.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

from lwm.envs import RecordTrajectory
from lwm.envs.control import Control, ControlSpec
from lwm.envs.registration import open_env, wrap
from lwm.model_options import ModelOptions, world_model
from lwm.rollout.loop import system_prompt
from lwm.rollout.task_env import close_env, make_task_env, recorder
from lwm.rollout.tasks import Task, get_task
from lwm.types import Context
from lwm.worldmodel import WorldModel


@dataclass(frozen=True)
class ServeConfig:
    """What a server serves: one domain, played by ``model`` (``mode="sim"``), the real environment
    (``"real"``), or — for the MCP mirror — recorded answers (``"replay"``, ``"cache-real-sim"``)."""

    domain: str
    model: ModelOptions | None = field(default_factory=ModelOptions)
    """The world model (a spec string is taken as ``ModelOptions(spec)``); None for no world model (real, or a
    replay with no fall-through). A served lwm-mini is asked as ``lwm simulate`` asks it."""
    mode: str = "sim"
    env_options: dict[str, Any] = field(default_factory=dict)
    """Keyword options of the real environment (as ``lwm collect --env-option``)."""
    store: Path | None = None
    """Where served episodes are recorded (a trajectory store folder); None records nothing."""
    max_turns: int | None = 50
    """Steps after which an episode is truncated (a bound on one session's history)."""
    control: ControlSpec | None = None
    """Perturbations around every step and a world bible (``lwm.envs.control``)."""

    def __post_init__(self) -> None:
        if isinstance(self.model, str):
            object.__setattr__(self, "model", ModelOptions(self.model))  # frozen: set once, here

    @property
    def real(self) -> bool:
        return self.mode == "real"

    @property
    def spec(self) -> str | None:
        """The world model's spec, for what a server says of itself."""
        return None if self.model is None else str(self.model.model)

    def world_model(self) -> WorldModel | None:
        """The world model every session of this server shares (None when nothing is simulated)."""
        if self.real or self.model is None:
            return None
        return world_model(self.model)


@dataclass
class StepResult:
    observation: str
    reward: float = 0.0
    done: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)


EnvFactory = Callable[[Context | None], gym.Env]
"""Builds a session's environment from its context, for a face that serves its own kind (the MCP mirror)."""


class Session:
    """One client's episode in the served environment. Calls of one session are serialised (``lock``)."""

    def __init__(self, config: ServeConfig, world_model: WorldModel | None, face: str,
                 make: EnvFactory | None = None):
        self.config, self.world_model, self.face, self.make = config, world_model, face, make
        self.lock = threading.Lock()
        self.id = uuid.uuid4().hex[:12]
        self.env: RecordTrajectory | None = None
        self.stepper: gym.Env | None = None
        """What a step goes through: the recorder, or for a task the task's checker around it (``TaskEnv``)."""
        self.task: Task | None = None
        self.last_used = time.monotonic()
        self.steps = 0
        self.done = False
        self.control = Control(config.control) if config.control is not None else None
        """One run of the control spec across the session's episodes: each reset without a seed is the next
        episode, with perturbations of its own (a new one per episode would replay the first's)."""

    def _open(self, context: Context | None, provenance: dict[str, Any]) -> gym.Env:
        """The episode's environment (the face's own, the world model's or the real one), wrapped and recorded."""
        wrapping: dict[str, Any] = {"store": self.config.store, "max_turns": self.config.max_turns,
                                    "control": self.control, "record": True, "provenance": provenance}
        if self.make is not None:
            return wrap(self.make(context), **wrapping)
        if not self.config.real and self.world_model is None:
            raise ValueError(f"mode {self.config.mode} simulates the {self.config.domain} domain: it needs a world "
                             "model")
        if self.config.real:
            return open_env(self.config.domain, context=context, env_options=self.config.env_options, **wrapping)
        return open_env(self.config.domain, self.world_model, context=context, **wrapping)

    def reset(self, seed: int | None = None, task: str | None = None,
              context: Context | dict[str, Any] | None = None) -> StepResult:
        """Start a new episode (closing the previous one): a task's, or the domain's with ``context``. A bad
        task or context is refused before anything is closed: the episode in progress goes on."""
        if task and self.config.mode not in ("sim", "real"):
            raise ValueError(f"tasks run in sim or real mode, not {self.config.mode}")
        chosen = get_task(task) if task else None
        if chosen is not None and chosen.domain != self.config.domain:
            raise ValueError(f"task {task} is a {chosen.domain} task; this server serves {self.config.domain}")
        if isinstance(context, dict):
            context = Context.model_validate(context)
        self.close()
        self.task = chosen
        provenance = {"served": self.face, "mode": self.config.mode, "session": self.id,
                      **({"task": self.task.id} if self.task else {})}
        if self.config.control is not None:
            provenance["control"] = self.config.control.model_dump(exclude_defaults=True)
        if self.task is not None:
            self.stepper = make_task_env(self.task, self.config.mode, world_model=self.world_model,
                                         store=self.config.store, max_turns=self.config.max_turns, control=self.control,
                                         record=True, provenance=provenance)
        else:
            self.stepper = self._open(context, provenance)
        self.env = recorder(self.stepper)
        observation, info = self.stepper.reset(seed=seed)
        self.steps, self.done = 0, False
        self.last_used = time.monotonic()
        if self.task is not None:  # a client that is not lwm's own agent learns the task and how to act here
            info = {**info, "instruction": self.task.instruction,
                    "prompt": system_prompt(self.task.domain, self.task.instruction, list(self.task.context.tools))}
        return StepResult(observation, info={**info, "session": self.id, "mode": self.config.mode})

    def step(self, action: str | dict[str, Any] | list[Any]) -> StepResult:
        """One action (the domain's format, as text or JSON); a task's ``final_answer`` ends the episode."""
        if self.env is None or self.done:
            raise gym.error.ResetNeeded("reset the session before stepping" if self.env is None
                                        else "the episode has ended: reset to start another")
        self.last_used = time.monotonic()
        assert self.stepper is not None
        observation, rew, terminated, truncated, info = self.stepper.step(
            action if isinstance(action, str) else json.dumps(action))
        if self.task is not None and "answer" in info:  # the task's final answer (TaskEnv recorded its reward)
            self.done = True
            return StepResult(observation, rew, True, False,
                              {"mode": self.config.mode, "answer": info["answer"], "task": self.task.id})
        if "invalid_action" not in info:  # a refused action is no turn: the count matches the episode's turns
            self.steps += 1
        self.done = terminated or truncated
        return StepResult(observation, float(rew), terminated, truncated, {**info, "mode": self.config.mode})

    def state(self) -> dict[str, Any]:
        trajectory = self.env.trajectory if self.env is not None else None
        return {"episode_id": trajectory.id if trajectory else None, "step_count": self.steps,
                "domain": self.config.domain, "mode": self.config.mode, "session": self.id,
                "task": self.task.id if self.task else None, "done": self.done,
                "model": None if self.world_model is None else self.world_model.backend.name}

    def close(self) -> None:
        """Close the episode's environment; an unfinished episode is recorded as far as it got."""
        if self.env is None:
            return
        env, self.env, self.stepper = self.env, None, None
        try:
            if env.trajectory is not None and env.trajectory.turns and not env.stored:
                env.finish()
        finally:
            close_env(env)


class Sessions:
    """Sessions by key for a face without its own session management (MCP): bounded in number, each
    expired after ``idle_seconds`` without a call; the oldest idle one makes room when full."""

    def __init__(self, config: ServeConfig, face: str, max_sessions: int = 64, idle_seconds: float = 900.0,
                 make: EnvFactory | None = None):
        self.config, self.face, self.make = config, face, make
        self.max_sessions, self.idle_seconds = max_sessions, idle_seconds
        self.world_model = config.world_model()
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> Session:
        with self._lock:
            self._expire()
            session = self._sessions.get(key)
            if session is None:
                if len(self._sessions) >= self.max_sessions:
                    raise RuntimeError(f"all {self.max_sessions} sessions are in use; try again later")
                session = self._sessions[key] = Session(self.config, self.world_model, self.face, self.make)
            session.last_used = time.monotonic()
            return session

    def _expire(self) -> None:
        now = time.monotonic()
        for key in [k for k, s in self._sessions.items() if now - s.last_used > self.idle_seconds]:
            self._sessions.pop(key).close()

    def __len__(self) -> int:
        return len(self._sessions)

    def close(self) -> None:
        with self._lock:
            for session in self._sessions.values():
                session.close()
            self._sessions.clear()
        if self.world_model is not None:
            self.world_model.close()
