"""Seeded random input for fuzzing the real environments and the served faces (tests and the soak).

Not random bytes: the pieces that broke things before, mixed at random (lone surrogates, NUL, runs of newlines,
``..`` and absolute paths, names that are not UTF-8, huge and non-finite numbers, long strings, the wrong JSON
type), so a short run reaches the odd corners. One ``random.Random`` per run, so a failure replays by its seed.
"""

from __future__ import annotations

import json
import random
from typing import Any

from lwm.types import well_formed

PIECES = ["a", "ls", " ", "\n", "\n" * 50, "\x00", "\ud800", "\udcff", "\ud83d\ude00", "é", "\t", "\x1b[2J", ";",
          "-", "--", "'", '"', "\\", "$(", "`", "../", "/", "/etc/passwd", "a/" * 40, "*", "%s", "{}", "C-c", "Enter",
          "x" * 5000, "\r", "\u202e", "NaN"]
NUMBERS = [0, 1, -1, 0.05, 2**63, 10**400, float("nan"), float("inf"), -0.0, 1e-300, True]


def text(rng: random.Random, pieces: int = 8) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, pieces)))


def value(rng: random.Random, depth: int = 0) -> Any:
    """Any JSON-ish value, nested at most three deep."""
    kind = rng.choice(["text", "number", "none", "list", "dict"] if depth < 3 else ["text", "number", "none"])
    if kind == "text":
        return text(rng)
    if kind == "number":
        return rng.choice(NUMBERS)
    if kind == "list":
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == "dict":
        return {text(rng, 2): value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    return None


def keystrokes(rng: random.Random) -> Any:
    """A terminal action: mostly keystroke lists with odd text and durations, sometimes any value at all."""
    if rng.random() < 0.15:
        return value(rng)
    return [{"keystrokes": text(rng), "duration": rng.choice([0, 0.05, 0.1, *NUMBERS])}
            for _ in range(rng.randint(1, 3))]


def from_schema(rng: random.Random, schema: dict[str, Any], depth: int = 0) -> Any:
    """A value of the shape ``schema`` asks for (its required properties, its item type), filled with odd text,
    so that calls get past the tool's argument check and into the tool itself."""
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        names = set(schema.get("required") or []) | set(rng.sample(sorted(properties), min(len(properties), 1)))
        return {name: from_schema(rng, properties.get(name) or {}, depth + 1) for name in sorted(names)}
    if kind == "array":
        return [from_schema(rng, schema.get("items") or {}, depth + 1) for _ in range(rng.randint(0, 2 if depth < 3
                                                                                               else 0))]
    if kind == "integer":
        return rng.choice([0, 1, -1, 3, 2**63])
    if kind == "number":
        return rng.choice([0.5, -1.0, 1e308])
    if kind == "boolean":
        return rng.random() < 0.5
    return text(rng)


def tool_call(rng: random.Random, tools: list[str] | list[dict[str, Any]]) -> Any:
    """A tool call: a known or unknown tool with odd arguments (paths among them), sometimes any value. Given
    tool definitions (with ``inputSchema``), half the calls fit the schema (with odd text in every string)."""
    if rng.random() < 0.15:
        return value(rng)
    if tools and isinstance(tools[0], dict):
        tool = rng.choice(tools)
        if rng.random() < 0.5:
            return {"name": tool["name"], "arguments": from_schema(rng, tool.get("inputSchema") or {})}
        tools = [t["name"] for t in tools]
    arguments = {name: rng.choice([text(rng), value(rng)]) for name in rng.sample(
        ["path", "command", "content", "pattern", "old_str", "new_str", "start_line", "timeout", "query", "name",
         "entities", "key"], rng.randint(0, 4))}
    return {"name": rng.choice([*tools, text(rng, 2)]), "arguments": arguments}


def frame(rng: random.Random, action: Any) -> str:
    """An OpenEnv WebSocket text frame: mostly a step with ``action``, sometimes state, a bad type or not JSON."""
    choice = rng.random()
    if choice < 0.75:
        return json.dumps({"type": "step", "data": {"action": action}})
    if choice < 0.85:
        return json.dumps({"type": "state"})
    if choice < 0.92:
        return json.dumps(rng.choice([[1, 2], "step", {"type": text(rng, 2)}, {"type": "step", "data": value(rng)}]))
    return well_formed(text(rng))  # not JSON at all (a text frame is UTF-8: no lone surrogate but escaped)
