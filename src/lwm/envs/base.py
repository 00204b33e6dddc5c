"""The environment contract shared by simulated and real environments.

Gymnasium's: ``reset(*, seed, options) -> (obs, info)`` and ``step(action) -> (obs, reward,
terminated, truncated, info)``, with text observations and text actions (the action as its domain
writes it: JSON for terminal/MCP/…, code for web/OS). Subclasses supply the initial observation and
one transition; this class keeps the trajectory, so every environment records what happened the same
way, with observations capped at ``MAX_OBSERVATION`` characters. An action that does not parse is
answered with an error observation, as a real tool would, and ``info["invalid_action"]`` says why.
Limits on episode length come from wrappers (``TimeLimit``).
"""

from __future__ import annotations

import string
import time
from collections.abc import Callable
from typing import Any, Protocol

import gymnasium as gym
from gymnasium import spaces

from lwm.domains import ActionError, Domain, get_domain
from lwm.types import Action, Context, Observation, Provenance, Trajectory

UNREPEATABLE = frozenset({"cached", "seconds", "reused_tokens"})
"""Observation metadata that differs between two runs of the same step (kept out of ``info``)."""
MAX_TEXT = 1_000_000
MAX_OBSERVATION = 100_000
"""Characters an observation keeps (head and tail); a real tool can print megabytes, a history cannot."""


def cap_text(text: str, limit: int = MAX_OBSERVATION) -> str:
    """``text`` if it fits, else its head and tail with the number of characters left out between them."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half:,} characters omitted ...]\n{text[-half:]}"


class AnyText(spaces.Text):
    """A text space that contains any string up to ``max_length``; samples printable ASCII."""

    def __init__(self, max_length: int = MAX_TEXT, seed: int | None = None):
        super().__init__(max_length, min_length=0, charset=string.printable, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if mask is None and probability is None:  # keep samples short: the default would be up to max_length
            mask = (int(self.np_random.integers(1, 65)), None)
        return super().sample(mask=mask, probability=probability)


class StepControl(Protocol):
    """Something that stands around each transition (``lwm.envs.control.Control``: injected errors,
    latency, drift), reproducibly from the episode's seed."""

    def reset(self, episode_seed: int | None) -> None: ...

    def step(self, action: Action, turn: int, transition: Callable[[Action], Observation]) -> Observation: ...


class TextEnv(gym.Env[str, str]):
    metadata = {"render_modes": ["ansi"]}
    control: StepControl | None = None
    errors_as_observations: bool = True
    """A real environment's failure on one action (a tmux or OS error, a closed sandbox) is that step's error
    observation (``info["env_error"]``), never an exception out of ``step()`` that loses a served session.
    ``SimEnv`` turns it off: a world model that fails is not the environment's answer and must not be recorded
    as one."""

    def __init__(self, domain: str | Domain, context: Context | None = None, render_mode: str | None = None):
        self.domain = get_domain(domain) if isinstance(domain, str) else domain
        self.context = context or Context()
        self.render_mode = render_mode
        self.observation_space = AnyText()
        self.action_space = AnyText()
        self.trajectory = self._new_trajectory()

    def _new_trajectory(self) -> Trajectory:
        return Trajectory(domain=self.domain.name, context=self.context, provenance=self.provenance())

    def provenance(self) -> Provenance:
        return Provenance(source="manual")

    # --- what subclasses supply ----------------------------------------------------------------
    def initial_observation(self, seed: int | None, options: dict[str, Any]) -> str:
        return self.context.initial_state or self.domain.initial_state

    def transition(self, action: Action) -> Observation:
        raise NotImplementedError

    # --- the contract --------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = options or {}
        if "context" in options:
            self.context = options["context"] if isinstance(options["context"], Context) \
                else Context.model_validate(options["context"])
        self.trajectory = self._new_trajectory()
        if self.control is not None:
            self.control.reset(seed)
        self._last = self.initial_observation(seed, options)
        if self.control is not None:  # after: a real env makes its trajectory anew once its server is up
            provenance = self.trajectory.provenance
            self.trajectory = self.trajectory.model_copy(update={"provenance": provenance.model_copy(
                update={"extra": {**provenance.extra, "control_seed": self.control.episode_seed}})})
        return self._last, {"domain": self.domain.name, "turn": 0}

    def step(self, action: str | Action | Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        try:
            parsed = action if isinstance(action, Action) else \
                self.domain.action_from_text(action) if isinstance(action, str) else self.domain.action(action)
        except ActionError as exc:
            self._last = f"Error: invalid action: {exc}"
            return self._last, 0.0, False, False, {"invalid_action": str(exc), "turn": len(self.trajectory.turns)}
        started = time.perf_counter()
        turn = len(self.trajectory.turns) + 1
        observation = (self.control.step(parsed, turn, self._transition) if self.control is not None
                       else self._transition(parsed))
        seconds = round(time.perf_counter() - started, 4)
        # The step's duration and whether the answer came from the cache are recorded with the turn
        # (provenance), but kept out of info: Gymnasium expects equal infos for equal seeds and actions.
        info = {"turn": len(self.trajectory.turns) + 1,
                **{k: v for k, v in observation.metadata.items() if k not in UNREPEATABLE}}
        observation = observation.model_copy(update={"content": cap_text(observation.content),
                                                     "metadata": {**observation.metadata, "seconds": seconds}})
        self.trajectory = self.trajectory.extended(parsed, observation)
        self._last = observation.content
        return observation.content, 0.0, False, False, info  # a task's reward: lwm.rollout.task_env.TaskEnv

    def _transition(self, action: Action) -> Observation:
        if not self.errors_as_observations:
            return self.transition(action)
        try:
            return self.transition(action)
        except Exception as exc:  # noqa: BLE001 - any failure of the real environment is the step's answer
            error = f"{type(exc).__name__}: {exc}"
            return Observation(content=f"Error: the {self.domain.name} environment failed on this action: {error}",
                               metadata={"env_error": error})

    def render(self) -> str | None:
        return self._last if self.render_mode == "ansi" else None
