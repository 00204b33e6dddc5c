"""The data lwm passes around: actions, observations, turns and trajectories.

All are pydantic models so that a trajectory written by one command (collect, simulate, shell)
round-trips through JSON into any other (bench export, training data) without loss.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticSerializationError

JSONValue = str | int | float | bool | None | list[Any] | dict[str, Any]
TextId = Annotated[str, BeforeValidator(lambda value: str(value) if isinstance(value, int) else value)]
"""A row id: text, though some published files write numbers."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(value: Any) -> Any:
    """``value`` with every lone surrogate (``"\\ud800"`` sent as a JSON escape, a file name that is not UTF-8
    decoded with surrogateescape) replaced by U+FFFD, in every string, key and nested item. Such text can be
    neither typed, nor written as UTF-8, nor stored: an action holding one once lost its whole episode. A
    surrogate pair split over two code points is joined into its character."""
    if isinstance(value, str):
        if _SURROGATE.search(value) is None:
            return value
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list | tuple):
        return [well_formed(item) for item in value]
    if isinstance(value, dict):
        return {well_formed(key): well_formed(item) for key, item in value.items()}
    return value


def finite_number(value: Any) -> bool:
    """Whether ``value`` is a JSON number with a finite float value: not a bool, NaN, Infinity, or an integer
    such as 10**400 that no float holds (durations and timeouts are checked with it)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


class _WellFormed(BaseModel):
    """A model whose text is always storable: see :func:`well_formed`."""

    @model_validator(mode="before")
    @classmethod
    def _well_formed(cls, data: Any) -> Any:
        return well_formed(data) if isinstance(data, dict) else data


class Action(_WellFormed):
    """What the agent did: the domain's own action format, kept as given.

    Terminal: a list of ``{"keystrokes", "duration"}``; MCP/SWE/Search/Android: a JSON tool call;
    Web: a BrowserGym call string such as ``click('a12')``; OS: Python code.
    """

    model_config = ConfigDict(frozen=True)

    content: JSONValue
    thought: str | None = None
    """The agent's reasoning before the action, if recorded; not shown to the world model."""


class Observation(_WellFormed):
    """What the environment answered, as clean text (markers, tags and reasoning removed)."""

    model_config = ConfigDict(frozen=True)

    content: str
    raw: str | None = None
    """The model's full answer before parsing, for simulated observations."""
    reasoning: str | None = None
    """The model's reasoning, from ``<think>`` blocks or a ``reasoning_content`` field."""
    metadata: dict[str, Any] = Field(default_factory=dict)


class Turn(BaseModel):
    action: Action
    observation: Observation


class Context(_WellFormed):
    """The state a session starts from: what the world model is told before the first turn."""

    task: str | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)
    """Tool definitions (JSON schema), for MCP, SWE and Search."""
    initial_state: str | None = None
    """The environment before the first action: a first screen, a page's tree, a file listing."""
    system_prompt: str | None = None
    """A system prompt carried by the data itself (AgentWorldBench's ``system_str``); wins over templates."""
    extra: dict[str, Any] = Field(default_factory=dict)


class Provenance(BaseModel):
    source: Literal["real", "simulated", "imported", "manual"] = "manual"
    environment: str | None = None
    model: str | None = None
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    extra: dict[str, Any] = Field(default_factory=dict)


class Trajectory(BaseModel):
    """One session in one domain: its context and the turns so far."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    domain: str
    context: Context = Field(default_factory=Context)
    turns: list[Turn] = Field(default_factory=list)
    provenance: Provenance = Field(default_factory=Provenance)

    def extended(self, action: Action, observation: Observation) -> Trajectory:
        """A copy with one more turn; the original is left as it was."""
        return self.model_copy(update={"turns": [*self.turns, Turn(action=action, observation=observation)]})

    @classmethod
    def load(cls, path: str | Path) -> Trajectory:
        """Read a trajectory JSON file, naming the file in the error when it is malformed."""
        path = Path(path)
        try:
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: not a valid lwm trajectory JSON: {exc}") from exc

    def save(self, path: str | Path) -> None:
        try:
            text = self.model_dump_json(indent=2)
        except PydanticSerializationError:  # a lone surrogate outside the actions and observations
            text = json.dumps(well_formed(self.model_dump(mode="json")), ensure_ascii=False, indent=2)
        Path(path).write_text(text, encoding="utf-8")


def read_tools(path: str | Path) -> list[dict[str, Any]]:
    """A tools file (``--tools``): a JSON list of MCP tool definitions (``name``, ``description``,
    ``inputSchema``, optionally ``outputSchema``), or ``{"tools": [...]}`` as an MCP server's tools/list
    returns it. Errors name the file and what it should hold."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"--tools {path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"--tools {path}: not a JSON file ({exc})") from None
    tools = data.get("tools") if isinstance(data, dict) else data
    if not isinstance(tools, list) or not all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in tools):
        raise ValueError(f"--tools {path}: expected a JSON list of tools, each an object with a 'name' (and "
                         "'description', 'inputSchema'), or {\"tools\": [...]} as tools/list returns it")
    return tools


def load_context(path: str | Path) -> Context:
    """Read a context file: a Context JSON, a whole trajectory (its context is used), or a tool list."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read context JSON: {exc}") from exc
    try:
        if isinstance(data, list):
            return Context(tools=data)
        if "turns" in data and "domain" in data:
            return Trajectory.model_validate(data).context
        if "tools" in data and not set(data) - {"tools"}:
            return Context(tools=data["tools"])
        return Context.model_validate(data)
    except ValueError as exc:
        raise ValueError(f"{path}: not a valid context: {exc}") from exc
