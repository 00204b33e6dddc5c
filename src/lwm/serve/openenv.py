"""The OpenEnv face: an ``openenv-core`` environment server over the session core.

OpenEnv owns the protocol (HTTP + WebSocket, one environment instance per WebSocket session, capacity
and idle expiry); lwm supplies the environment: typed ``LwmAction`` / ``LwmObservation`` / ``LwmState``
and an ``Environment`` whose every instance is one ``Session``. OpenEnv's own clients (``GenericEnvClient``,
TRL's OpenEnv integration) talk to it unchanged; ``--real`` fronts the real environment at the same
interface, so a trainer switches between simulator and real by URL.

``SessionLimits`` holds OpenEnv's HTTP side to the same bound as its WebSocket sessions: a one-shot
``POST /reset`` or ``/step`` builds a whole environment (a sandbox, for ``--real``), so WebSocket sessions and
one-shot requests in flight together stay within ``--max-sessions``; OpenEnv's MCP endpoints (``/mcp``: they
open sessions that live until the idle timeout) are closed, as lwm's environments have no MCP tools (``lwm serve
mcp`` is that face); a WebSocket frame that is not a JSON object is answered with a validation error and the
session goes on.
"""

from __future__ import annotations

import json
import re
from typing import Any

import gymnasium as gym
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from openenv.core.env_server import (
    Action,
    ConcurrencyConfig,
    Environment,
    Observation,
    State,
    create_fastapi_app,
)
from openenv.core.env_server.types import EnvironmentMetadata, WSErrorCode, WSErrorResponse
from pydantic import Field

from lwm.rollout.tasks import UnknownTaskError
from lwm.serve.auth import refuse
from lwm.serve.session import ServeConfig, Session, StepResult
from lwm.types import JSONValue, well_formed
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
        if task is not None and not isinstance(task, str):
            raise ValueError(f"task must be a task id string (lwm agent tasks list), not {type(task).__name__}")
        if context is not None and not isinstance(context, dict):
            raise ValueError(f"context must be a JSON object (a Context), not {type(context).__name__}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError(f"seed must be an integer, not {seed!r}")
        return _observation(self.session.reset(seed=seed, task=task, context=context))

    def step(self, action: LwmAction, timeout_s: float | None = None, **_: Any) -> LwmObservation:
        return _observation(self.session.step(action.action))

    @property
    def state(self) -> LwmState:
        return LwmState(**self.session.state())

    def get_metadata(self) -> EnvironmentMetadata:
        config = self.session.config
        what = "the real environment" if config.real else f"simulated by {config.spec}"
        return EnvironmentMetadata(name=f"lwm-{config.domain}", version="0.1.0",
                                   description=f"lwm {config.domain} environment, {what}")

    def close(self) -> None:
        self.session.close()


def openenv_app(config: ServeConfig, max_sessions: int = 64, idle_seconds: float | None = 900.0) -> Any:
    """The OpenEnv FastAPI app (inside ``SessionLimits``): at most ``max_sessions`` WebSocket sessions and
    one-shot requests at once, each session closed after ``idle_seconds`` without a message."""
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

    async def bad_request(request: Any, exc: Exception) -> JSONResponse:
        """One line, where and why (``seed: Input should be a valid integer``), not pydantic's list of errors."""
        if hasattr(exc, "errors") and exc.errors():
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error.get("loc", ()) if part != "body")
            text = f"{where + ': ' if where else ''}{error.get('msg', exc)}"
        else:
            text = str(exc)
        return JSONResponse(status_code=422, content={"detail": f"{type(exc).__name__}: {text}"})

    app.add_exception_handler(gym.error.ResetNeeded, no_session)
    # pydantic's ValidationError is a ValueError; FastAPI's RequestValidationError is a body OpenEnv's models refuse
    for kind in (ValueError, UnknownTaskError, RequestValidationError):
        app.add_exception_handler(kind, bad_request)
    return SessionLimits(app, max_sessions)


class SessionLimits:
    """ASGI middleware around the OpenEnv app; see the module docstring."""

    ONE_SHOT = ("/reset", "/step")

    def __init__(self, app: Any, max_sessions: int):
        self.app, self.max_sessions = app, max_sessions
        self.open = 0
        """WebSocket sessions open plus one-shot requests in flight."""

    def __getattr__(self, name: str) -> Any:  # the FastAPI app's routes, state and lifespan, for callers and tests
        return getattr(self.app, name)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] not in ("http", "websocket") or not (path in ("/ws", "/mcp") or
                                                               (scope["type"] == "http" and path in self.ONE_SHOT)):
            return await self.app(scope, receive, send)
        if path == "/mcp":
            return await refuse(scope, receive, send, 404, "lwm's OpenEnv environments have no MCP tools: sessions "
                                "are WebSocket connections at /ws (`lwm serve mcp` is lwm's MCP face)")
        if self.open >= self.max_sessions:
            reason = f"all {self.max_sessions} sessions are in use (--max-sessions); try again later"
            if scope["type"] == "http":
                return await refuse(scope, receive, send, 503, reason)
            await receive()  # as OpenEnv answers a session over its bound: accepted, told why, closed
            await send({"type": "websocket.accept"})
            error = WSErrorResponse(data={"message": reason, "code": WSErrorCode.CAPACITY_REACHED,
                                          "active_sessions": self.open, "max_sessions": self.max_sessions})
            await send({"type": "websocket.send", "text": error.model_dump_json()})
            return await send({"type": "websocket.close", "code": 1013})
        self.open += 1
        try:
            await self.app(scope, _objects_only(receive, send) if scope["type"] == "websocket" else receive, send)
        finally:
            self.open -= 1


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A JSON escape of a surrogate (``\\ud800``): where one is lone, the frame's text is made well-formed."""


def _objects_only(receive: Any, send: Any) -> Any:
    """``receive`` that answers a binary frame or a JSON frame that is not an object with OpenEnv's validation
    error and waits for the next frame, instead of handing OpenEnv a message it ends the session on; a lone
    surrogate becomes U+FFFD (OpenEnv ended the session when its error message could not echo one: fuzz test)."""

    async def objects() -> dict[str, Any]:
        while True:
            message = await receive()
            if message["type"] != "websocket.receive":
                return message
            text = message.get("text")
            if text is None:
                problem = "binary frames are not messages: send JSON text"
            else:
                try:
                    value = json.loads(text)
                except ValueError:
                    return message  # OpenEnv answers INVALID_JSON itself
                if isinstance(value, dict):
                    if _SURROGATE_ESCAPE.search(text):  # OpenEnv could not answer it: its error echoes the input
                        return {**message, "text": json.dumps(well_formed(value))}
                    return message
                problem = f"a message is a JSON object with a 'type', not a JSON {type(value).__name__}"
            error = WSErrorResponse(data={"message": problem, "code": WSErrorCode.VALIDATION_ERROR})
            await send({"type": "websocket.send", "text": error.model_dump_json()})

    return objects
