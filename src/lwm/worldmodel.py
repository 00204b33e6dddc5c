"""WorldModel: the next observation of a session, from any backend.

``predict(trajectory, action)`` builds the conversation (the domain's system prompt with the
session's context, each earlier turn as a user/assistant pair, the current action), keeps it inside
the model's context window by dropping the oldest turns first (and saying so in the system prompt),
asks the backend, parses the answer and caches it on disk.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from lwm.backends import Backend, GenerateConfig, Message, load_backend
from lwm.cache import GenerationCache, cache_key
from lwm.domains import Domain, get_domain
from lwm.parsing import parse_answer
from lwm.types import Action, Observation, Trajectory, Turn

T = TypeVar("T")
RENDER_MEMO = 65536
MESSAGE_OVERHEAD = 8
"""Tokens a chat template adds around each message (role markers); a safe round figure."""


class ContextOverflowError(ValueError):
    """Even the system prompt and the current action alone do not fit the model's window."""


@dataclass(frozen=True)
class Prompt:
    messages: list[Message]
    dropped_turns: int
    tokens: int


def omitted_note(count: int) -> str:
    return (f"\n\nNote: turns 1-{count} of this session are omitted to fit the context window; "
            f"the history shown starts at turn {count + 1}.")


class WorldModel:
    def __init__(
        self,
        backend: Backend | str | None = None,
        *,
        config: GenerateConfig | None = None,
        cache: GenerationCache | bool = True,
        prompts_dir: str | Path | None = None,
        compact: bool | None = None,
        stop_at_answer: bool | None = None,
        **backend_options: Any,
    ):
        self.backend: Backend = backend if backend is not None and not isinstance(backend, str) \
            else load_backend(backend, **backend_options)
        self.config = config or GenerateConfig()
        # Not ``cache or None``: an empty cache has length 0 and would read as false.
        self.cache = cache if isinstance(cache, GenerationCache) else GenerationCache() if cache else None
        self.prompts_dir = prompts_dir
        self.compact = self.backend.compact_prompts if compact is None else compact
        if stop_at_answer if stop_at_answer is not None else self.compact:
            # Small models rarely reason first; stopping at the closing tag saves many tokens.
            self.config = self.config.model_copy(update={"stop": ("</predicted_observation>",)})
        self._count = lru_cache(maxsize=8192)(self.backend.count_tokens)
        self._last: tuple[str, list[Turn], list[tuple[str, str, int]]] = ("", [], [])
        self._rendered: OrderedDict[tuple[int, int, str], tuple[Turn, tuple[str, str, int]]] = OrderedDict()

    # --- messages ------------------------------------------------------------------------------
    def build_prompt(self, trajectory: Trajectory, action: Action, reserve: int | None = None) -> Prompt:
        """The messages for ``action`` after ``trajectory``, inside the window less ``reserve`` answer tokens
        (``config.max_tokens`` by default)."""
        domain = get_domain(trajectory.domain)
        system = domain.system_prompt(trajectory.context, compact=self.compact, prompts_dir=self.prompts_dir)
        rendered = self._render_history(domain, trajectory.turns)
        current = domain.render_action(action, len(rendered) + 1)
        return self._fit(system, [(u, a) for u, a, _ in rendered], [t for *_, t in rendered], current, reserve)

    def fit_messages(self, messages: list[Message], reserve: int | None = None) -> Prompt:
        """Ready-made messages (system?, user/assistant pairs, user) inside the window, oldest pairs dropped."""
        system = messages[0]["content"] if messages and messages[0]["role"] == "system" else None
        body = messages[1:] if system is not None else messages
        roles = [m["role"] for m in body]
        if len(body) % 2 == 0 or roles != ["user", "assistant"] * (len(body) // 2) + ["user"]:
            return Prompt(messages, 0, sum(self._count(m["content"]) for m in messages))  # not a session layout
        pairs = [(body[i]["content"], body[i + 1]["content"]) for i in range(0, len(body) - 1, 2)]
        costs = [self._count(u) + self._count(a) + 2 * MESSAGE_OVERHEAD for u, a in pairs]
        return self._fit(system, pairs, costs, body[-1]["content"], reserve)

    def _fit(self, system: str | None, pairs: list[tuple[str, str]], cost: list[int], current: str,
             reserve: int | None) -> Prompt:
        fixed = self._count(system or "") + self._count(current) + 2 * MESSAGE_OVERHEAD
        total, dropped = fixed + sum(cost), 0
        window = self.backend.context_window
        if window is not None:
            budget = window - (self.config.max_tokens if reserve is None else reserve)
            if total > budget:
                fixed += self._count(omitted_note(len(pairs)))
                total = fixed + sum(cost)
                while dropped < len(pairs) and total > budget:
                    total -= cost[dropped]
                    dropped += 1
            if total > budget:
                raise ContextOverflowError(
                    f"the system prompt and the current action need ~{fixed} tokens, but {self.backend.name} "
                    f"has a {window}-token window with {self.config.max_tokens if reserve is None else reserve} "
                    "reserved for the answer; use a model with a larger window, compact prompts, or a smaller "
                    "max_tokens")
            if dropped and system is not None:
                system += omitted_note(dropped)
        messages: list[Message] = [{"role": "system", "content": system}] if system is not None else []
        for user, assistant in pairs[dropped:]:
            messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
        messages.append({"role": "user", "content": current})
        return Prompt(messages, dropped, total)

    def _render_history(self, domain: Domain, turns: list[Turn]) -> list[tuple[str, str, int]]:
        """Every earlier turn rendered; the part shared with the previous call (same turn objects) is reused."""
        last_domain, last_turns, last_rendered = self._last
        same = 0
        if last_domain == domain.name:
            for old, new in zip(last_turns, turns, strict=False):
                if old is not new:
                    break
                same += 1
        rendered = last_rendered[:same] + [self._render(domain, t, i) for i, t in enumerate(turns[same:], same + 1)]
        self._last = (domain.name, list(turns), rendered)
        return rendered

    def _render(self, domain: Domain, turn: Turn, index: int) -> tuple[str, str, int]:
        """A history turn as (user, assistant, tokens), memoized: an episode re-sends every earlier turn."""
        key = (id(turn), index, domain.name)
        hit = self._rendered.get(key)
        if hit is not None and hit[0] is turn:  # the stored turn keeps its id from being reused
            self._rendered.move_to_end(key)
            return hit[1]
        user = domain.render_action(turn.action, index)
        assistant = domain.render_observation(turn.observation.content)
        value = (user, assistant, self._count(user) + self._count(assistant) + 2 * MESSAGE_OVERHEAD)
        self._rendered[key] = (turn, value)
        if len(self._rendered) > RENDER_MEMO:
            self._rendered.popitem(last=False)
        return value

    # --- prediction ----------------------------------------------------------------------------
    def _action(self, domain: Domain, action: Action | Any) -> Action:
        return action if isinstance(action, Action) else domain.action(action)

    async def predict(self, trajectory: Trajectory, action: Action | Any) -> Observation:
        """The next observation after ``action``; raises ActionError, ContextOverflowError, BackendError."""
        domain = get_domain(trajectory.domain)
        action = self._action(domain, action)
        prompt = self.build_prompt(trajectory, action)
        observation = await self.complete(prompt.messages, domain, fit=False)
        metadata = {**observation.metadata, "dropped_turns": prompt.dropped_turns,
                    "prompt_tokens": observation.metadata["prompt_tokens"] or prompt.tokens}
        return observation.model_copy(update={"metadata": metadata})

    async def complete(self, messages: list[Message], domain: Domain | None = None, *, fit: bool = True) -> Observation:
        """Ask the model with ready-made messages (e.g. a benchmark sample's own), parse and cache the answer.

        Messages longer than the model's window lose their oldest turns first, as in ``predict`` (which
        has fitted them already and passes ``fit=False``)."""
        if fit and self.backend.context_window is not None:
            messages = self.fit_messages(messages).messages
        use_cache = self.cache is not None and self.config.deterministic
        key = cache_key(self.backend.name, messages, self.config) if use_cache else ""
        generation = self.cache.get(key) if use_cache else None
        cached = generation is not None
        if generation is None:
            generation = await self.backend.generate(messages, self.config)
            if use_cache:
                self.cache.put(key, self.backend.name, generation)
        parsed = (domain.parse if domain else parse_answer)(generation.text, reasoning=generation.reasoning)
        return Observation(
            content=parsed.content,
            raw=generation.text,
            reasoning=parsed.reasoning,
            metadata={
                "model": self.backend.name, "parse": parsed.status, "cached": cached,
                "prompt_tokens": generation.prompt_tokens, "completion_tokens": generation.completion_tokens,
                "finish_reason": generation.finish_reason,
            },
        )

    async def predict_many(self, items: Iterable[tuple[Trajectory, Action | Any]]) -> list[Observation]:
        """Predictions for many (trajectory, action) pairs, run concurrently, in input order."""
        return list(await asyncio.gather(*(self.predict(t, a) for t, a in items)))

    def predict_sync(self, trajectory: Trajectory, action: Action | Any) -> Observation:
        return run_sync(self.predict(trajectory, action))

    def close(self) -> None:
        run_sync(self.backend.aclose())
        if self.cache is not None:
            self.cache.close()


class _LoopThread:
    """A background event loop, for sync calls made from inside a running loop (e.g. a notebook)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="lwm-loop", daemon=True).start()


_background: _LoopThread | None = None
_background_lock = threading.Lock()
_local = threading.local()


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code.

    Each thread keeps one event loop of its own, so async clients (bound to a loop) are reused from
    call to call without a thread hop; inside an already running loop, a background loop runs it.
    """
    global _background
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        loop = getattr(_local, "loop", None)
        if loop is None or loop.is_closed():
            loop = _local.loop = asyncio.new_event_loop()
        task = loop.create_task(coro)
        try:
            return loop.run_until_complete(task)
        except BaseException:  # Ctrl+C: abandon the call instead of leaving it pending in the loop
            task.cancel()
            loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
            raise
    with _background_lock:
        if _background is None:
            _background = _LoopThread()
    return asyncio.run_coroutine_threadsafe(coro, _background.loop).result()
