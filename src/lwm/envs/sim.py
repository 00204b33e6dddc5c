"""SimEnv: a world model playing the environment, behind the same interface as a real one."""

from __future__ import annotations

from typing import Any

from lwm.domains import Domain
from lwm.envs.base import TextEnv
from lwm.registry import register
from lwm.types import Action, Context, Observation, Provenance
from lwm.worldmodel import WorldModel


@register("env", "sim")
class SimEnv(TextEnv):
    def __init__(self, world_model: WorldModel, domain: str | Domain, context: Context | None = None,
                 render_mode: str | None = None):
        self.world_model = world_model
        super().__init__(domain, context, render_mode)

    def provenance(self) -> Provenance:
        return Provenance(source="simulated", environment="sim", model=self.world_model.backend.name)

    def initial_observation(self, seed: int | None, options: dict[str, Any]) -> str:
        if seed is not None:  # the seed of an episode drives the model's sampling for that episode
            self.world_model.config = self.world_model.config.model_copy(update={"seed": seed})
        return super().initial_observation(seed, options)

    def transition(self, action: Action) -> Observation:
        return self.world_model.predict_sync(self.trajectory, action)
