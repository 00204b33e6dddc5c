"""The one interface every way of reaching a model implements.

A backend turns chat messages into text. Everything domain-specific (prompts, parsing, context
budget, cache) lives in WorldModel, so a new backend is a small class with ``generate``.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

Message = dict[str, str]
"""An OpenAI-style chat message: ``{"role": "system"|"user"|"assistant", "content": str}``."""


class GenerateConfig(BaseModel):
    """Sampling settings. Part of the cache key, so every field that changes the answer is here."""

    model_config = ConfigDict(frozen=True)

    temperature: float = 0.0
    max_tokens: int = 1024
    seed: int | None = 0
    top_p: float | None = None
    stop: tuple[str, ...] | None = None
    json_only: bool = False
    """The answer must be one JSON value (grammar-constrained where the backend can, else asked for)."""
    stop_loops: bool = True
    """A backend that watches its tokens (embedded) ends an answer that starts repeating itself; off for a
    published protocol's requests, answered as the reference script's server would."""

    @property
    def deterministic(self) -> bool:
        return self.temperature == 0.0 or self.seed is not None


class Generation(BaseModel):
    text: str
    reasoning: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reused_tokens: int | None = None
    """Prompt tokens the backend did not evaluate again (kept in its KV cache from an earlier prompt)."""


class BackendError(RuntimeError):
    """A model call that failed for good (after retries); the message says where and why."""


@runtime_checkable
class Backend(Protocol):
    name: str
    """Identifies the model for cache keys and reports, e.g. ``openai:Qwen/Qwen-AgentWorld-35B-A3B``."""
    context_window: int | None
    """Tokens the model accepts (prompt + answer); None when unknown (no budget enforced)."""
    compact_prompts: bool
    """Small models get the compact prompt templates."""

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Generation: ...

    def count_tokens(self, text: str) -> int: ...

    async def aclose(self) -> None: ...


def approx_tokens(text: str) -> int:
    """A tokenizer-free estimate (about 3.5 characters a token), on the safe side for budgets."""
    return len(text) * 2 // 7 + 1


class BackendInfo(BaseModel):
    """What ``lwm models`` shows for one backend."""

    name: str
    usable: bool
    detail: str
    example: str
