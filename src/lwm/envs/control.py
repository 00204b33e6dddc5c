"""Control specs: perturbations applied around the world model (or the real environment), reproducibly
by seed, and world bibles, the facts of a fictional world the simulator is told and must keep to.

A spec is YAML (or JSON), schema version 1::

    version: 1
    seed: 7
    perturbations:
      - tools: ["search*"]          # glob of tool names (MCP/SWE/Search calls); omit for every step
        error: {rate: 0.1, kinds: [timeout, server_error]}
        empty: 0.05                 # an empty result
        truncate: {rate: 0.1, keep: 200}
        rate_limit: {calls: 5, per_seconds: 60}
        latency: {seconds: 0.2, jitter: 0.1}
        drift: {rate: 0.5, rename: {price: cost}, extra: {currency: EUR}}
    bible:
      facts: ["The shop sells exactly three products."]
      entities: {users: [{id: 42, name: alice}]}

Each decision draws from a generator seeded by (spec seed, episode seed, turn, rule), so the same
episode seed and actions give the same perturbations. An episode's seed comes from the run's seed (the last
``reset(seed=...)``, else the spec's) and the episode's index in the run: ``reset()`` without a seed starts
the next episode with a seed of its own, so no two episodes of a run replay the same faults (the seed is
recorded in the episode's provenance, ``control_seed``); which were applied is kept in the step's metadata
(``perturbations``). An injected error or rate limit replaces the call (nothing reaches the environment,
as with a real failing API); the other kinds change the answer after it is made.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import random
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from lwm.types import Action, Context, Observation

ERRORS = {
    "timeout": "Error: the request timed out",
    "server_error": "Error: internal server error (500)",
    "not_found": "Error: not found (404)",
    "unauthorized": "Error: unauthorized (401)",
    "bad_request": "Error: bad request (400)",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorRule(_Strict):
    rate: float = Field(ge=0, le=1)
    kinds: list[Literal["timeout", "server_error", "not_found", "unauthorized", "bad_request"]] = ["server_error"]


class TruncateRule(_Strict):
    rate: float = Field(ge=0, le=1)
    keep: int = Field(default=200, ge=0)
    """Characters kept."""


class RateLimitRule(_Strict):
    calls: int = Field(ge=1)
    per_seconds: float = Field(gt=0)


class LatencyRule(_Strict):
    seconds: float = Field(ge=0)
    jitter: float = Field(default=0.0, ge=0)


class DriftRule(_Strict):
    rate: float = Field(default=1.0, ge=0, le=1)
    rename: dict[str, str] = Field(default_factory=dict)
    """Field renames in JSON answers (at any depth)."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Fields added to JSON object answers."""


class Perturbation(_Strict):
    tools: list[str] | None = None
    error: ErrorRule | None = None
    empty: float | None = Field(default=None, ge=0, le=1)
    truncate: TruncateRule | None = None
    rate_limit: RateLimitRule | None = None
    latency: LatencyRule | None = None
    drift: DriftRule | None = None

    def applies(self, tool: str | None) -> bool:
        return self.tools is None or (tool is not None and any(fnmatch.fnmatch(tool, p) for p in self.tools))


class Bible(_Strict):
    facts: list[str] = Field(default_factory=list)
    entities: dict[str, Any] = Field(default_factory=dict)


class ControlSpec(_Strict):
    version: Literal[1] = 1
    seed: int = 0
    perturbations: list[Perturbation] = Field(default_factory=list)
    bible: Bible | None = None

    @classmethod
    def load(cls, path: str | Path) -> ControlSpec:
        """Read a spec; a malformed one raises ValueError naming the file and the field."""
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            return cls.model_validate(data or {})
        except yaml.YAMLError as exc:
            raise ValueError(f"{path}: not YAML: {exc}") from None
        except ValueError as exc:
            errors = getattr(exc, "errors", lambda: [])()
            where = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'top'}: {e['msg']}" for e in errors) or str(exc)
            raise ValueError(f"{path}: {where}") from None

    def with_bible(self, context: Context | None) -> Context:
        """``context`` with the bible's facts and entities, which the world model's prompt then shows."""
        context = context or Context()
        if self.bible is None:
            return context
        extra = dict(context.extra)
        if self.bible.facts:
            extra["facts of this world (keep every observation consistent with them)"] = "\n".join(
                f"- {fact}" for fact in self.bible.facts)
        if self.bible.entities:
            extra["entities of this world"] = yaml.safe_dump(self.bible.entities, sort_keys=False,
                                                             allow_unicode=True).strip()
        return context.model_copy(update={"extra": extra})


def _tool(action: Action) -> str | None:
    content = action.content
    return content.get("name") if isinstance(content, dict) and isinstance(content.get("name"), str) else None


def _drift(value: Any, rule: DriftRule) -> Any:
    if isinstance(value, dict):
        return {rule.rename.get(k, k): _drift(v, rule) for k, v in value.items()}
    if isinstance(value, list):
        return [_drift(v, rule) for v in value]
    return value


def episode_seed(run_seed: int, episode: int) -> int:
    """The perturbation seed of a run's ``episode``-th episode (0-based): reproducible, and unrelated from one
    episode to the next."""
    return int.from_bytes(hashlib.sha256(f"{run_seed}:{episode}".encode()).digest()[:8], "big")


class Control:
    """A spec applied to a run's episodes, one after the other (each ``reset`` starts one)."""

    def __init__(self, spec: ControlSpec, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic):
        self.spec, self.sleep, self.clock = spec, sleep, clock
        self.run_seed, self.episode = spec.seed, -1
        self.episode_seed = episode_seed(self.run_seed, 0)
        self.calls: dict[int, deque[float]] = {}

    def reset(self, seed: int | None) -> None:
        """Start an episode: with ``seed``, the first of a run seeded so; without, the run's next one."""
        if seed is not None:
            self.run_seed, self.episode = seed, 0
        else:
            self.episode += 1
        self.episode_seed = episode_seed(self.run_seed, self.episode)

    def _rng(self, turn: int, rule: int) -> random.Random:
        return random.Random(f"{self.spec.seed}:{self.episode_seed}:{turn}:{rule}")

    def step(self, action: Action, turn: int, transition: Callable[[Action], Observation]) -> Observation:
        """The observation for ``action`` at ``turn``: ``transition``'s, perturbed as the spec says."""
        tool = _tool(action)
        rules = [(i, p) for i, p in enumerate(self.spec.perturbations) if p.applies(tool)]
        applied: list[str] = []
        for i, rule in rules:
            if rule.rate_limit is not None:
                window = self.calls.setdefault(i, deque())
                now = self.clock()
                while window and now - window[0] > rule.rate_limit.per_seconds:
                    window.popleft()
                if len(window) >= rule.rate_limit.calls:
                    return self._made("Error: rate limit exceeded (429): too many requests, retry later",
                                      ["rate_limit"])
                window.append(now)
            rng = self._rng(turn, i)
            if rule.error is not None and rng.random() < rule.error.rate:
                kind = rng.choice(rule.error.kinds)
                return self._made(ERRORS[kind], [f"error:{kind}"])
            if rule.latency is not None:
                self.sleep(rule.latency.seconds + rng.random() * rule.latency.jitter)
                applied.append("latency")
        observation = transition(action)
        text = observation.content
        for i, rule in rules:
            rng = self._rng(turn, 1000 + i)
            if rule.empty is not None and rng.random() < rule.empty:
                text = ""
                applied.append("empty")
            if rule.truncate is not None and rng.random() < rule.truncate.rate and len(text) > rule.truncate.keep:
                text = text[: rule.truncate.keep]
                applied.append("truncate")
            if rule.drift is not None and rng.random() < rule.drift.rate:
                drifted = self._drifted(text, rule.drift)
                if drifted != text:
                    text = drifted
                    applied.append("drift")
        if not applied:
            return observation
        return observation.model_copy(update={"content": text,
                                              "metadata": {**observation.metadata, "perturbations": applied}})

    @staticmethod
    def _drifted(text: str, rule: DriftRule) -> str:
        try:
            value = json.loads(text)
        except ValueError:
            return text
        value = _drift(value, rule)
        if isinstance(value, dict):
            value = {**value, **rule.extra}
        return json.dumps(value, ensure_ascii=False, indent=2)

    @staticmethod
    def _made(text: str, applied: list[str]) -> Observation:
        return Observation(content=text, metadata={"perturbations": applied, "tool_error": True})


def apply_control(env: Any, spec: Control | ControlSpec | str | Path | None) -> Any:
    """``env`` (any lwm environment, wrapped or not) with ``spec``'s perturbations around its steps and its
    bible in the context the world model is shown; ``env`` itself when there is no spec. A ``Control`` goes on
    counting its run's episodes (a served session makes a new environment per episode and keeps one)."""
    if spec is None:
        return env
    control = spec if isinstance(spec, Control) else \
        Control(spec if isinstance(spec, ControlSpec) else ControlSpec.load(spec))
    inner = env.unwrapped
    inner.context = control.spec.with_bible(inner.context)
    inner.control = control
    return env
