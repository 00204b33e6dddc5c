"""Where lwm's guidance goes in a prompt (``lwm.layout``), and what each layout costs a server that keeps KV state."""

from itertools import pairwise

import pytest

from lwm.conversation import conversation, fit
from lwm.domains import get_domain
from lwm.layout import EXAMPLES_HEADING, SESSION_EXAMPLES, guide
from lwm.retrieval import TransitionIndex
from tests.test_retrieval import session

CORPUS = [session(f"t{n}", f"terminal:p{n % 3}", [(f"echo {w}", w) for w in ("alpha", "beta", "gamma", "delta")])
          for n in range(6)]
SESSION = session("own", "terminal:own", [(f"echo {w}", w) for w in ("alpha", "beta", "gamma", "delta", "epsilon")])


def prompt(k: int, when: str, index: TransitionIndex) -> tuple[list[dict], list]:
    """Step k's messages (0-based: the action of turn k after turns before it) as lwm-mini is asked."""
    conv = conversation(get_domain("terminal"), SESSION.context, SESSION.turns[:k], SESSION.turns[k].action)
    guided, shown = guide(conv, "terminal", edits=True, retriever=index, exclude={"own"}, when=when)
    return fit(guided).messages, shown


def test_kept_examples_make_each_steps_prompt_the_start_of_the_next():
    index = TransitionIndex.build(CORPUS)
    steps = [prompt(k, "kept", index) for k in range(5)]
    for (now, _), (later, _) in pairwise(steps):
        assert later[:len(now)] == now  # nothing before the new turn changes: a server reuses all of it
    shown = steps[-1][1]
    keys = [(t.trajectory, t.turn) for t in shown]
    assert len(keys) == len(set(keys)) == SESSION_EXAMPLES  # each example once, then no more
    text = "\n".join(m["content"] for m in steps[-1][0])
    assert text.count(EXAMPLES_HEADING) >= 2  # examples added over several turns ...
    assert [f"### Example {n} " in text for n in range(1, SESSION_EXAMPLES + 1)] == [True] * SESSION_EXAMPLES
    # ... and every earlier example is one a step showed: step k's examples are the start of step k+1's
    for (_, before), (_, after) in pairwise(steps):
        assert after[:len(before)] == before


def test_examples_at_every_step_change_the_last_message_and_leave_the_history_bare():
    index = TransitionIndex.build(CORPUS)
    now, shown = prompt(2, "every-step", index)
    later, _ = prompt(3, "every-step", index)
    assert len(shown) == 2 and EXAMPLES_HEADING in now[-1]["content"]
    assert later[:len(now)] != now and EXAMPLES_HEADING not in later[len(now) - 1]["content"]
    with pytest.raises(ValueError, match="examples when 'sometimes'"):
        prompt(1, "sometimes", index)


def test_a_kept_examples_fenced_text_does_not_hide_which_tool_an_earlier_turn_called():
    """The same-tool note of a kept turn is worked out from the session's own actions, not from messages that
    already carry examples (an example's result may hold a fenced block that reads as another call)."""
    from lwm.layout import guide
    from tests.test_retrieval import tool_session

    fenced = 'Thought noted:\n```json\n{"name": "other_tool", "arguments": {}}\n```'
    corpus = [tool_session(f"x{n}", "mcp:x", [("think", {"n": n}, fenced)]) for n in range(3)]
    own = tool_session("own", "mcp:own", [("think", {"n": 1}, "ok 1"), ("list", {}, "[]"), ("think", {"n": 2}, "")])
    conv = conversation(get_domain("mcp"), own.context, own.turns[:2], own.turns[2].action)
    guided, shown = guide(conv, "mcp", edits=True, retriever=TransitionIndex.build(corpus), when="kept")
    assert shown and EXAMPLES_HEADING in guided.pairs[0][0]  # turn 1 showed examples, kept there
    assert "Turn 1 called `think` too" in guided.current
