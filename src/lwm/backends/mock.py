"""A deterministic backend for tests and overhead benchmarks: no model, no network, no delay."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from lwm.backends.base import BackendInfo, GenerateConfig, Generation, Message, approx_tokens
from lwm.registry import register

Script = Sequence[str] | Callable[[list[Message]], str]


@register("backend", "mock")
class MockBackend:
    """Answers from a script (a list cycled in order, or a function of the messages).

    Without a script it answers ``<predicted_observation>mock observation <digest></predicted_observation>``
    where the digest depends on the conversation's length and last message (cheap, so the mock stays
    free of cost in overhead benchmarks), so equal inputs give equal outputs.
    """

    compact_prompts = False

    def __init__(self, script: Script | None = None, *, name: str = "mock", context_window: int | None = 32768):
        self.name = name
        self.context_window = context_window
        self.script = script
        self.calls: list[list[Message]] = []

    @classmethod
    def from_spec(cls, model: str | None, **_: object) -> MockBackend:
        return cls(name=f"mock:{model}" if model else "mock")

    @classmethod
    def info(cls) -> BackendInfo:
        return BackendInfo(name="mock", usable=True, detail="deterministic answers, for tests", example="mock")

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Generation:
        self.calls.append(messages)
        if callable(self.script):
            text = self.script(messages)
        elif self.script:
            text = self.script[(len(self.calls) - 1) % len(self.script)]
        else:
            last = messages[-1]["content"] if messages else ""
            digest = hashlib.sha256(f"{len(messages)}:{last}".encode()).hexdigest()[:8]
            text = f"<predicted_observation>mock observation {digest}</predicted_observation>"
        return Generation(text=text, finish_reason="stop", completion_tokens=approx_tokens(text))

    def count_tokens(self, text: str) -> int:
        return approx_tokens(text)

    async def aclose(self) -> None:
        return None
