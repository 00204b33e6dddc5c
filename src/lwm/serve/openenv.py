"""The OpenEnv face: an ``openenv-core`` environment server over the session core.

OpenEnv owns the protocol (HTTP + WebSocket, one environment instance per WebSocket session, capacity
and idle expiry); lwm supplies the environment: typed ``LwmAction`` / ``LwmObservation`` / ``LwmState``
and an ``Environment`` whose every instance is one ``Session``. OpenEnv's own clients (``GenericEnvClient``,
TRL's OpenEnv integration) talk to it unchanged; ``--real`` fronts the real environment at the same
interface, so a trainer switches between simulator and real by URL.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from openenv.core.env_server import (
    Action,
    ConcurrencyConfig,
    Environment,
    Observation,
    State,
    create_fastapi_app,
)
from openenv.core.env_server.types import EnvironmentMetadata
from pydantic import Field

from lwm.serve.session import ServeConfig, Session, StepResult
from lwm.types import JSONValue
from lwm.worldmodel import WorldModel


class LwmAction(Action):
    """One action in the served domain's format: a JSON tool call, keystrokes, or a code string."""

    action: JSONValue = Field(description="The domain's action, e.g. {\"name\": \"search\", \"arguments\": {...}} "
                                          "or [{\"keystrokes\": \"ls\\n\"}]; a task's final_answer call ends it")


class LwmObservation(Observation):
    text: str = Field(description="The observation: what the world model (or the real environment) answered")
    info: dict[str, Any] = Field(default_factory=dict, description="The step's details (mode, turn, parse, …)")


class LwmState(State):
    domain: str = ""
    mode: str = "sim"
    task: str | None = None
    model: str | None = None


def _observation(result: StepResult) -> LwmObservation:
    return LwmObservation(text=result.observation, info=result.info, reward=result.reward,
                          done=result.done or result.truncated)


class LwmEnvironment(Environment[LwmAction, LwmObservation, LwmState]):
    """One OpenEnv session: an lwm ``Session`` (its own history), sharing the server's world model."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, config: ServeConfig, world_model: WorldModel | None):
        super().__init__()
        self.session = Session(config, world_model, face="openenv")

    def reset(self, seed: int | None = None, episode_id: str | None = None, task: str | None = None,
              context: dict[str, Any] | None = None, **_: Any) -> LwmObservation:
        return _observation(self.session.reset(seed=seed, task=task, context=context))

    def step(self, action: LwmAction, timeout_s: float | None = None, **_: Any) -> LwmObservation:
        return _observation(self.session.step(action.action))

    @property
    def state(self) -> LwmState:
        return LwmState(**self.session.state())

    def get_metadata(self) -> EnvironmentMetadata:
        config = self.session.config
        what = "the real environment" if config.real else f"simulated by {config.model}"
        return EnvironmentMetadata(name=f"lwm-{config.domain}", version="0.1.0",
                                   description=f"lwm {config.domain} environment, {what}")

    def close(self) -> None:
        self.session.close()


def openenv_app(config: ServeConfig, max_sessions: int = 64, idle_seconds: float | None = 900.0) -> FastAPI:
    """The OpenEnv FastAPI app: at most ``max_sessions`` WebSocket sessions, each closed after
    ``idle_seconds`` without a message."""
    world_model = config.world_model()
    app = create_fastapi_app(lambda: LwmEnvironment(config, world_model), LwmAction, LwmObservation,
                             concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions,
                                                                  session_timeout=idle_seconds))
    if world_model is not None:
        app.router.on_shutdown.append(world_model.close)

    async def no_session(request: Any, exc: Exception) -> JSONResponse:
        return JSONResponse(status_code=409, content={"detail": f"{exc}: sessions are WebSocket connections (/ws); "
                                                                "HTTP /reset and /step are one-shot, each on a new "
                                                                "environment"})

    app.add_exception_handler(gym.error.ResetNeeded, no_session)
    return app
