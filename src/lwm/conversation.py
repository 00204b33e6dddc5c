"""The one place a session becomes the messages a world model reads.

``conversation(domain, context, turns, action)`` lays a session out as AgentWorldBench does: the
domain's system prompt with the session's context, each earlier turn as a user (action) / assistant
(observation) pair, then the current action. ``fit(conversation, budget)`` keeps it inside a model's
window by dropping the oldest pairs first (and saying so in the system prompt). Inference, the
benchmark (whose samples carry ready-rendered pairs), every training set and the judge read sessions
through these two functions, and scorers read the history through ``history_parts``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lwm.backends import Message
from lwm.domains import Domain
from lwm.parsing import strip_marker
from lwm.types import Action, Context, Turn

MESSAGE_OVERHEAD = 8
"""Tokens a chat template adds around each message (role markers); a safe round figure."""
RENDER_MEMO = 65536


class ContextOverflowError(ValueError):
    """Even the system prompt and the current action alone do not fit the model's window."""


@dataclass(frozen=True)
class Conversation:
    """A session laid out as text: system prompt, (action, observation) pairs, the current action."""

    system: str | None
    pairs: Sequence[tuple[str, str]]
    current: str | None = None
    initial: str = ""
    """What the environment showed before the first action (the context's initial state): the base an edit of
    the first turn names as ``previous``."""
    json_tools: frozenset[str] = frozenset()
    """Tools whose results the context declares JSON (an MCP ``outputSchema``)."""

    def messages(self) -> list[Message]:
        """Every message, nothing dropped (``fit`` for a model's window)."""
        return fit(self).messages

    def text(self) -> str:
        """The whole session as plain text (continual pre-training)."""
        parts = [self.system] if self.system else []
        for user, assistant in self.pairs:
            parts += [user, assistant]
        if self.current is not None:
            parts.append(self.current)
        return "\n\n".join(parts)


@dataclass(frozen=True)
class Budget:
    """A model's window: ``window`` tokens (None: unlimited), ``reserve`` of them kept for the answer."""

    window: int | None = None
    reserve: int = 0
    count: Callable[[str], int] = field(default=lambda text: len(text) // 4)
    model: str = "the model"


@dataclass(frozen=True)
class Prompt:
    messages: list[Message]
    dropped_turns: int
    tokens: int


def omitted_note(count: int) -> str:
    return (f"\n\nNote: turns 1-{count} of this session are omitted to fit the context window; "
            f"the history shown starts at turn {count + 1}.")


_rendered: OrderedDict[tuple[int, int, str], tuple[Turn, tuple[str, str]]] = OrderedDict()


def render_turn(domain: Domain, turn: Turn, index: int) -> tuple[str, str]:
    """A history turn (1-based ``index``) as its (user, assistant) pair.

    Memoized by turn object: an episode re-sends every earlier turn at each step, and the same string
    objects let token counts be looked up instead of recomputed."""
    key = (id(turn), index, domain.name)
    hit = _rendered.get(key)
    if hit is not None and hit[0] is turn:  # the stored turn keeps its id from being reused
        _rendered.move_to_end(key)
        return hit[1]
    pair = (domain.render_action(turn.action, index), domain.render_observation(turn.observation.content))
    _rendered[key] = (turn, pair)
    if len(_rendered) > RENDER_MEMO:
        _rendered.popitem(last=False)
    return pair


def conversation(domain: Domain, context: Context, turns: Sequence[Turn], action: Action | None = None, *,
                 compact: bool = False, prompts_dir: str | Path | None = None) -> Conversation:
    """``turns`` then ``action`` (None: the session so far, e.g. for pre-training text) as a Conversation."""
    pairs = [render_turn(domain, turn, i) for i, turn in enumerate(turns, start=1)]
    current = domain.render_action(action, len(pairs) + 1) if action is not None else None
    json_tools = frozenset(str(t.get("function", t).get("name")) for t in context.tools or ()
                           if isinstance(t, dict) and (t.get("outputSchema") or t.get("output_schema")))
    return Conversation(domain.system_prompt(context, compact=compact, prompts_dir=prompts_dir), pairs, current,
                        str(context.initial_state or domain.initial_state or ""), json_tools)


def fit(conv: Conversation, budget: Budget | None = None) -> Prompt:
    """The conversation's messages inside ``budget``, oldest pairs dropped first; raises
    ContextOverflowError when the system prompt and the current action alone do not fit."""
    budget = budget or Budget()
    count = budget.count
    pairs, system, current = list(conv.pairs), conv.system, conv.current or ""
    cost = [count(u) + count(a) + 2 * MESSAGE_OVERHEAD for u, a in pairs]
    fixed = count(system or "") + count(current) + 2 * MESSAGE_OVERHEAD
    total, dropped = fixed + sum(cost), 0
    if budget.window is not None:
        limit = budget.window - budget.reserve
        if total > limit:
            fixed += count(omitted_note(len(pairs)))
            total = fixed + sum(cost)
            while dropped < len(pairs) and total > limit:
                total -= cost[dropped]
                dropped += 1
        if total > limit:
            raise ContextOverflowError(
                f"the system prompt and the current action need ~{fixed} tokens, but {budget.model} has a "
                f"{budget.window}-token window with {budget.reserve} reserved for the answer; use a model with "
                "a larger window, compact prompts, or a smaller max_tokens")
        if dropped and system is not None:
            system += omitted_note(dropped)
    messages: list[Message] = [{"role": "system", "content": system}] if system is not None else []
    for user, assistant in pairs[dropped:]:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    if conv.current is not None:
        messages.append({"role": "user", "content": current})
    return Prompt(messages, dropped, total)


def answer_room(messages: list[Message], wanted: int, budget: Budget) -> int:
    """``wanted`` answer tokens, or fewer where the window leaves less after ``messages`` sent whole (nothing
    dropped: a published protocol's request); raises ContextOverflowError when the messages alone fill it."""
    if budget.window is None:
        return wanted
    used = sum(budget.count(m["content"]) + MESSAGE_OVERHEAD for m in messages)
    if used >= budget.window:
        raise ContextOverflowError(f"the messages need ~{used} tokens, but {budget.model} has a "
                                   f"{budget.window}-token window")
    return min(wanted, budget.window - used)


def history_parts(pairs: Sequence[tuple[str, str]]) -> list[str]:
    """What a scorer reads as the session's history, turn by turn: each earlier action and its observation
    (marker removed). The benchmark's judge and the RL reward both read it, so they score alike."""
    return [f"{user}\n{strip_marker(assistant)}" for user, assistant in pairs]

