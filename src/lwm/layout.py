"""How lwm's own models are asked: a session laid out as ``lwm.conversation`` does, plus lwm's guidance.

``guide`` adds how to answer with edits (``lwm.edits``) to the system prompt, and before an action the real
transitions retrieved for it (``lwm.retrieval``) and the earlier turn that called the same tool. Where those go
decides what a step costs on a server that keeps the previous prompt's KV state: in the last user message they
are evaluated anew at every step; ``kept`` leaves them where they were first shown (``EXAMPLES_WHEN``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence

from lwm.conversation import Conversation
from lwm.edits import guidance
from lwm.parsing import strip_marker
from lwm.retrieval import AFTER_CHARS, BEFORE_CHARS, Transition, TransitionIndex, action_text, tool_name


def same_tool_turn(conv: Conversation) -> tuple[int, str] | None:
    """The latest earlier turn (1-based) of the session that called the tool the current action calls, and
    the tool's name: its result is the likeliest base for this one."""
    name = tool_name(action_text(conv.current or ""))
    if name is None:
        return None
    for k in range(len(conv.pairs), 0, -1):
        if tool_name(action_text(conv.pairs[k - 1][0])) == name:
            return k, name
    return None




EXAMPLES_HEADING = "Real transitions recorded in similar environments"
"""How a prompt's retrieved examples begin (a prompt without it showed none)."""


def examples_block(examples: Sequence[Transition], start: int = 1) -> str:
    """The examples as a user message shows them, before the action, numbered from ``start`` (``example N`` is
    also an edit base)."""
    if not examples:
        return ""
    parts = [f"{EXAMPLES_HEADING} (for format and facts; this session's environment may differ):"]
    for n, t in enumerate(examples, start=start):
        before = t.before[-BEFORE_CHARS:]
        after = t.after if len(t.after) <= AFTER_CHARS else t.after[:AFTER_CHARS] + "\n[...]"
        parts.append(f"\n### Example {n} ({t.source})\nObservation before (end):\n{before}\nAction:\n{t.action}\n"
                     f"Observation after:\n{after}")
    return "\n".join(parts) + "\n\n"


def same_tool_note(turn: int, name: str) -> str:
    return f"Turn {turn} called `{name}` too: its observation is the likeliest base (`@edit turn {turn}`).\n\n"


EXAMPLES_WHEN = ("every-step", "no-base", "kept")
"""When a prompt shows retrieved transitions: at every step in the last user message (as lwm-mini v3.1 and v4
were trained), only where the session has nothing to copy from yet (its first turn; a tool call whose tool it
has not called before), or ``kept``: at the step they are first retrieved, and kept in that turn's message
from then on, so a session's prompt only grows (``guide``)."""
SESSION_EXAMPLES = 6
"""The most examples a ``kept`` session shows in all: new ones are added until then, none after."""


def needs_examples(conv: Conversation, when: str) -> bool:
    """Whether this step's prompt shows retrieved transitions (``EXAMPLES_WHEN``). Examples sit in the last
    user message, which changes every step, so each step evaluates them anew: ~650 tokens, most of a later
    step's cost on a CPU (benchmarks/sim_session.py)."""
    if when not in EXAMPLES_WHEN:
        raise ValueError(f"examples when {when!r}? one of {', '.join(EXAMPLES_WHEN)}")
    if when in ("every-step", "kept") or not conv.pairs:
        return True
    return tool_name(action_text(conv.current or "")) is not None and same_tool_turn(conv) is None


def guide(conv: Conversation, domain: str | None, *, edits: bool = False, retriever: TransitionIndex | None = None,
          examples: int = 2, exclude: Collection[str] = (), exclude_sources: Collection[str] = (),
          when: str = "every-step") -> tuple[Conversation, list[Transition]]:
    """``conv`` as lwm's own models are asked, and the transitions shown. How to answer with edits goes into
    the system prompt, which stays the same from step to step (a server reuses the previous step's prefix).
    The retrieved real transitions and, for a tool call, the earlier turn that called the same tool go before
    the action: in the last user message only (``every-step``, ``no-base``: evaluated anew at every step), or,
    with ``kept``, in the message of the turn that first showed them, kept there at every later step, so step
    k's prompt is the start of step k+1's and a server evaluates only what is new. Inference and training data
    both lay prompts out through here, so a model is trained on the prompts it is asked with."""
    if conv.system is None or conv.current is None or (not edits and retriever is None):
        return conv, []
    wanted = needs_examples(conv, when)  # a bad ``when`` is said before anything is searched
    system = conv.system + (guidance(retriever is not None) if edits else "")

    def search(action: str, before: str) -> list[Transition]:
        if retriever is None or domain is None:
            return []
        return retriever.search(domain, action_text(action), before, examples, exclude_trajectories=exclude,
                                exclude_sources=exclude_sources)

    def note(turn: Conversation) -> str:
        same = same_tool_turn(turn) if edits else None
        return same_tool_note(*same) if same else ""

    if when != "kept":
        shown = search(conv.current, strip_marker(conv.pairs[-1][1]) if conv.pairs else "") if wanted else []
        return dataclasses.replace(conv, system=system, current=examples_block(shown) + note(conv) + conv.current), \
            shown
    shown, seen, pairs = [], set(), list(conv.pairs)
    for k in range(len(pairs) + 1):  # each turn as it was asked, then this one
        user = pairs[k][0] if k < len(pairs) else conv.current
        found = search(user, strip_marker(pairs[k - 1][1]) if k else "") if len(shown) < SESSION_EXAMPLES else []
        new = [t for t in found if (t.trajectory, t.turn) not in seen][:SESSION_EXAMPLES - len(shown)]
        # the note reads the session's own turns: earlier messages here already carry examples, whose text
        # may hold a fenced block that reads as another call
        lead = examples_block(new, len(shown) + 1) + note(dataclasses.replace(conv, pairs=conv.pairs[:k],
                                                                              current=user))
        shown += new
        seen.update((t.trajectory, t.turn) for t in new)
        if k < len(pairs):
            pairs[k] = (lead + user, pairs[k][1])
        else:
            current = lead + user
    return dataclasses.replace(conv, system=system, pairs=pairs, current=current), shown
