"""SimEnv: a world model playing the environment, behind the same interface as a real one."""

from __future__ import annotations

from typing import Any

from lwm.backends import GenerateConfig
from lwm.domains import Domain
from lwm.envs.base import TextEnv
from lwm.registry import register
from lwm.types import Action, Context, Observation, Provenance, Trajectory
from lwm.worldmodel import WorldModel


@register("env", "sim")
class SimEnv(TextEnv):
    """``reset(options={"trajectory": t})`` continues the session ``t`` (its context and turns)."""

    errors_as_observations = False

    def __init__(self, world_model: WorldModel, domain: str | Domain, context: Context | None = None,
                 render_mode: str | None = None):
        self.world_model = world_model
        # This episode's sampling settings; the world model (perhaps shared by many envs) is left as it is.
        self.config: GenerateConfig | None = None
        super().__init__(domain, context, render_mode)

    def provenance(self) -> Provenance:
        return Provenance(source="simulated", environment="sim", model=self.world_model.backend.name)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        options = options or {}
        previous = options.get("trajectory")
        if previous is not None:
            previous = previous if isinstance(previous, Trajectory) else Trajectory.model_validate(previous)
            if previous.domain != self.domain.name:
                raise ValueError(f"cannot continue a {previous.domain} session in a {self.domain.name} SimEnv")
            options = {**options, "context": previous.context}
        obs, info = super().reset(seed=seed, options=options)
        if previous is not None and previous.turns:
            self.trajectory = self.trajectory.model_copy(update={"turns": list(previous.turns)})
            self._last = obs = previous.turns[-1].observation.content
            info = {**info, "turn": len(previous.turns)}
        return obs, info

    def initial_observation(self, seed: int | None, options: dict[str, Any]) -> str:
        # The seed of an episode drives the model's sampling for that episode only.
        self.config = None if seed is None else self.world_model.config.model_copy(update={"seed": seed})
        return super().initial_observation(seed, options)

    def transition(self, action: Action) -> Observation:
        return self.world_model.predict_sync(self.trajectory, action, self.config)
