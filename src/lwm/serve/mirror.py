"""A mirrored MCP server's environment: each tool call answered by the source its mode allows.

Modes: ``sim`` (the world model), ``real`` (the real server, recorded), ``replay`` (recorded answers;
an unknown call is an error, or falls through to the world model when one is given), and
``cache-real-sim`` (a recorded answer if there is one, else the real server, else the world model).
Every answer's ``metadata["source"]`` says where it came from (replay, real, sim), and the world model
always sees the session's whole history, whatever answered the earlier calls.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, Literal

from lwm.envs.base import TextEnv
from lwm.types import Action, Context, Observation, Provenance, Trajectory
from lwm.worldmodel import WorldModel

Mode = Literal["sim", "real", "replay", "cache-real-sim"]
MODES: tuple[str, ...] = ("sim", "real", "replay", "cache-real-sim")


class MirrorMode:
    """What a mode needs and uses, in one place (the mirror and `lwm serve mcp` both ask here)."""

    def __init__(self, mode: str, fall_through: bool = False):
        if mode not in MODES:
            raise ValueError(f"unknown --mode {mode!r}; have: {', '.join(MODES)}")
        self.mode = mode
        self.needs_replay = mode in ("replay", "cache-real-sim")
        """It answers from recordings (--replay)."""
        self.uses_real = mode in ("real", "cache-real-sim")
        """It calls the real server (--mirror)."""
        self.simulates = mode in ("sim", "cache-real-sim") or (mode == "replay" and fall_through)
        """A world model answers (some) calls."""

    def check(self, *, real: bool, replay: bool, world_model: bool | None = None) -> None:
        """Raise ValueError naming what the mode lacks (``world_model`` None: not checked yet)."""
        if self.needs_replay and not replay:
            raise ValueError(f"--mode {self.mode} answers from recordings: give --replay TRAJECTORIES")
        if self.uses_real and not real:
            raise ValueError(f"--mode {self.mode} calls the real server: give --mirror PRESET|COMMAND|URL")
        if world_model is not None and self.mode == "sim" and not world_model:
            raise ValueError("mode sim needs a world model")


def call_key(action: Action | dict[str, Any]) -> str:
    """A tool call's identity: its name and arguments, key order ignored."""
    content = action.content if isinstance(action, Action) else action
    return json.dumps({"name": content.get("name"), "arguments": content.get("arguments") or {}}, sort_keys=True)


def invalid_call(tools: list[dict[str, Any]], action: Action, validators: dict[str, Any] | None = None) -> str | None:
    """Why a real server would refuse ``action`` before running it (an unknown tool, arguments that break
    the tool's input schema), in the words MCP servers use; None when it is a valid call. ``validators`` keeps
    each tool's schema validator from call to call (building one costs more than validating)."""
    import jsonschema

    name = action.content.get("name") if isinstance(action.content, dict) else None
    tool = next((t for t in tools if t.get("name") == name), None)
    if tool is None:
        return f"Unknown tool: {name}"
    validators = {} if validators is None else validators
    if name not in validators:
        validators[name] = jsonschema.Draft202012Validator(tool.get("inputSchema") or {"type": "object"})
    errors = sorted(validators[name].iter_errors(action.content.get("arguments") or {}), key=lambda e: list(e.path))
    if not errors:
        return None
    where = ".".join(str(p) for p in errors[0].path)
    return f"Invalid arguments for tool {name}: " + (f"{where}: " if where else "") + errors[0].message


class Replay:
    """Recorded answers by tool call. The same call asked again in a session gets the next recorded answer
    to it (a stateful server answers a repeated call differently), the last one once they run out."""

    def __init__(self, trajectories: Iterable[Trajectory]):
        self.answers: dict[str, list[str]] = defaultdict(list)
        for trajectory in trajectories:
            for turn in trajectory.turns:
                if isinstance(turn.action.content, dict):
                    self.answers[call_key(turn.action)].append(turn.observation.content)

    def answer(self, action: Action, asked_before: int) -> str | None:
        found = self.answers.get(call_key(action))
        return found[min(asked_before, len(found) - 1)] if found else None

    def __len__(self) -> int:
        return sum(len(v) for v in self.answers.values())


class MirrorEnv(TextEnv):
    """The ``mcp`` domain with the mirrored server's tools; see the module docstring for the modes."""

    def __init__(self, mode: Mode, tools: list[dict[str, Any]], *, world_model: WorldModel | None = None,
                 real_options: dict[str, Any] | None = None, replay: Replay | None = None,
                 context: Context | None = None):
        MirrorMode(mode).check(real=real_options is not None, replay=replay is not None,
                               world_model=world_model is not None)
        self.mode, self.world_model, self.replay = mode, world_model, replay
        self._validators: dict[str, Any] = {}
        self.errors_as_observations = mode == "real"  # a failing world model is not the server's answer
        self.real_options = real_options
        self.real: Any = None
        context = (context or Context()).model_copy(update={"tools": tools})
        super().__init__("mcp", context)

    def provenance(self) -> Provenance:
        model = self.world_model.backend.name if self.world_model else None
        return Provenance(source="real" if self.mode == "real" else "simulated", environment=f"mirror:{self.mode}",
                          model=model)

    def initial_observation(self, seed: int | None, options: dict[str, Any]) -> str:
        self._close_real()
        if self.real_options is not None:
            from lwm.envs.real.mcp import MCPEnv

            try:
                self.real = MCPEnv(**self.real_options)
                self.real.reset(seed=seed)
            except Exception:
                if self.mode == "real":
                    raise
                self._close_real()  # cache-real-sim: without the real server, the world model answers
        return super().initial_observation(seed, options)

    def transition(self, action: Action) -> Observation:
        if self.replay is not None:
            asked = sum(1 for t in self.trajectory.turns if call_key(t.action) == call_key(action))
            text = self.replay.answer(action, asked)
            if text is not None:
                return Observation(content=text, metadata={"source": "replay", "tool": action.content["name"]})
        if self.real is not None:
            observation = self.real.transition(action)
            return observation.model_copy(update={"metadata": {**observation.metadata, "source": "real"}})
        if self.world_model is not None:
            invalid = invalid_call(self.context.tools, action, self._validators)
            if invalid is not None:  # the real server refuses it without running anything; so does the mirror
                return Observation(content=invalid, metadata={"source": "sim", "tool_error": True,
                                                              "tool": action.content.get("name")})
            observation = self.world_model.predict_sync(self.trajectory, action)
            return observation.model_copy(update={"metadata": {**observation.metadata, "source": "sim"}})
        return Observation(content=f"Error: no recorded answer for {call_key(action)}",
                           metadata={"source": "replay", "tool_error": True, "replay_miss": True})

    def _close_real(self) -> None:
        if self.real is not None:
            self.real.close()
            self.real = None

    def close(self) -> None:
        self._close_real()
