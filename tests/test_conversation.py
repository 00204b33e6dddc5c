"""The one layout of a session as chat messages (lwm.conversation): the order of the parts, the window fit that
drops the oldest turns first and says so, and the errors when nothing fits."""

import pytest

from lwm.conversation import (
    Budget,
    ContextOverflowError,
    Conversation,
    answer_room,
    conversation,
    fit,
    history_parts,
)
from lwm.domains import get_domain
from lwm.types import Action, Context, Observation, Turn


def _turns(n: int) -> list[Turn]:
    return [Turn(action=Action(content=[{"keystrokes": f"echo {i}\n", "duration": 0.1}]),
                 observation=Observation(content=f"$ echo {i}\n{i}")) for i in range(1, n + 1)]


def test_a_session_is_system_then_action_observation_pairs_then_the_current_action():
    terminal = get_domain("terminal")
    conv = conversation(terminal, Context(task="count files"), _turns(2),
                        Action(content=[{"keystrokes": "ls\n", "duration": 0.1}]))
    roles = [m["role"] for m in conv.messages()]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "count files" in conv.messages()[0]["content"]
    assert conv.messages()[1]["content"].startswith("### Turn 1") and conv.messages()[-1]["content"].startswith(
        "### Turn 3")
    assert conv.messages()[2]["content"] == terminal.render_observation("$ echo 1\n1")
    assert conv.text().startswith(conv.system) and conv.text().endswith(conv.current)


def test_fit_drops_the_oldest_turns_first_and_says_so_in_the_system_prompt():
    conv = Conversation("system", [(f"action {i} " * 20, f"observation {i} " * 20) for i in range(6)], "now")
    whole = fit(conv)
    assert whole.dropped_turns == 0 and len(whole.messages) == 14
    tight = fit(conv, Budget(window=whole.tokens - 10, reserve=0))
    assert tight.dropped_turns >= 1 and tight.tokens <= whole.tokens - 10
    assert tight.messages[1]["content"].startswith(f"action {tight.dropped_turns} ")  # the newest ones are kept
    assert f"turns 1-{tight.dropped_turns} of this session are omitted" in tight.messages[0]["content"]


def test_nothing_fits_is_a_clear_error_and_answer_room_shrinks_to_the_window():
    conv = Conversation("system " * 100, [], "now")
    with pytest.raises(ContextOverflowError, match="window"):
        fit(conv, Budget(window=50, reserve=10, model="tiny"))
    messages = [{"role": "user", "content": "x" * 400}]  # ~100 tokens at 4 characters a token
    assert answer_room(messages, 4096, Budget(window=1000)) < 1000 - 90
    assert answer_room(messages, 64, Budget(window=1000)) == 64
    with pytest.raises(ContextOverflowError):
        answer_room(messages, 64, Budget(window=50))


def test_history_parts_are_what_a_scorer_reads():
    parts = history_parts([("### Turn 1\nls", "**Environment Observation:**\na.txt")])
    assert parts == ["### Turn 1\nls\na.txt"]
