"""Explorer policies: plausible, varied actions without a strong model.

An explorer looks at what the current observation shows (files, elements, ids, text) and picks the next
action from templates filled with those things, with a controlled share of mistakes (missing files,
bad arguments, wrong ids), because a world model has to predict errors too. Randomness comes only from
the ``random.Random`` it is given, so a seed reproduces an episode's choices.
"""

from __future__ import annotations

import random
import re
from typing import Any, Protocol

from lwm.types import Context

WORDS = ("alpha", "beta", "gamma", "delta", "report", "notes", "data", "config", "draft", "summary", "todo",
         "budget", "meeting", "server", "backup", "plan", "result", "index", "sample", "log")


class Explorer(Protocol):
    name: str

    def start(self, rng: random.Random, context: Context, observation: str) -> None: ...

    def act(self, observation: str) -> Any:
        """The next action's content, in the domain's format."""
        ...


class BaseExplorer:
    """Shared pieces: the rng, the mistake rate, and weighted choice among action makers."""

    name = "base"

    def __init__(self, mistake_rate: float = 0.15):
        self.mistake_rate = mistake_rate
        self.rng = random.Random(0)

    def start(self, rng: random.Random, context: Context, observation: str) -> None:
        self.rng = rng
        self.context = context
        self.observe(observation)

    def observe(self, observation: str) -> None:
        """Remember what the observation shows (override per domain)."""

    def word(self) -> str:
        return self.rng.choice(WORDS)

    def pick(self, makers: list[tuple[float, Any]]) -> Any:
        weights = [w for w, _ in makers]
        return self.rng.choices([m for _, m in makers], weights=weights)[0]()

    def mistake(self) -> bool:
        return self.rng.random() < self.mistake_rate


def find_all(pattern: str, text: str) -> list[str]:
    return list(dict.fromkeys(re.findall(pattern, text)))


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    """A JSON tool call, as the mcp/swe/search domains write them."""
    return {"name": name, "arguments": arguments}
