import json

from lwm.backends import GenerateConfig, Generation, MockBackend
from lwm.conversation import Conversation
from lwm.domains import get_domain
from lwm.forms import (
    answer_note,
    echoes,
    expects_json,
    html_text,
    is_error,
    is_html,
    is_json,
    repeating_tail,
    strip_truncation_mark,
    trim_loop,
    unrelated,
)
from lwm.types import Action
from lwm.worldmodel import WorldModel, run_sync


def test_a_looping_end_is_found_in_text_and_tokens_and_cut_after_its_first_unit():
    looping = "total 4\n" + "drwxr-xr-x 2 user user 4096 a\n" * 9
    kept, loop = trim_loop(looping)
    assert kept == "total 4\ndrwxr-xr-x 2 user user 4096 a" and loop["period"] == 30
    assert trim_loop(looping + "drwxr-xr")[0] == kept  # a unit cut mid-way by the token cap
    assert repeating_tail([1, 2] + [7, 8, 9] * 20) == (2, 3)


def test_ordinary_answers_are_not_loops():
    for text in (", ".join(str(i) for i in range(200)), json.dumps([0] * 40), "a\nb\nc\n" + "-" * 30 + "\nend"):
        assert trim_loop(text) == (text, None)
    assert repeating_tail(list(range(100))) is None


def test_truncation_marks_html_and_json_are_recognised():
    assert strip_truncation_mark("line\n[...]") == ("line", True)
    assert strip_truncation_mark("a [...] b") == ("a [...] b", False)
    assert is_html('<pre><code class="language-html">x</code></pre>') and not is_html("a < b")
    assert html_text('<pre><code class="language-json">{"a": 1}</code></pre>') == '{"a": 1}'
    assert is_json('{"a": 1}') and is_json("[1]") and not is_json("Entities created") and not is_json("")
    assert expects_json(['{"x": 1}'], [], False) and not expects_json(["done"], ['{"x": 1}'], False)
    assert expects_json([], ['{"x": 1}', "[]"], False) and not expects_json([], [], False)
    assert expects_json([], [], True)
    # evidence before the declared schema: a server that declares one may still answer text
    assert not expects_json(["Allowed directories:\n/work"], [], True)
    assert not expects_json([], ["Allowed directories:\n/work"], True)
    assert is_html("<!-- no results -->") and not is_html("<3 results")
    assert is_error("Error: ENOENT: no such file") and is_error("MCP error -32602: bad") and not is_error('{"e": 1}')
    assert answer_note({"finish_reason": "loop", "form": {"loop": {"period": 3, "cut": 40}}}).startswith("the answer")
    assert answer_note({"finish_reason": "stop"}) == ""


def test_the_note_says_what_was_removed_what_is_left_and_what_each_repair_did():
    """Once it said "cut after its first repeat (96 characters)" beside a 740-character answer, and "it answered
    nothing: unguided" beside a whole answer: each part now says what it means."""
    note = answer_note({"finish_reason": "loop", "form": {"loop": {"period": 3, "cut": 96}}}, "x" * 740)
    assert "96 characters removed" in note and note.endswith("the observation is 740 characters")
    unguided = answer_note({"form": {"empty": "unguided"}}, "a whole answer")
    assert "its answer was empty; asked again without lwm's guidance" in unguided and "answered nothing" not in unguided
    assert "even when asked again" in answer_note({"form": {"empty": "none"}}, "")
    assert "the previous observation was kept" in answer_note({"form": {"empty": "previous"}})
    assert "that was not JSON either" in answer_note({"form": {"json": "not json"}})
    assert "the markup was removed" in answer_note({"form": {"html": "stripped"}})
    edit = {"edit": {"status": "applied", "base": "example 1", "blocks": 1, "unrelated": True}}
    assert "it edited retrieved example 1, another session's observation" in answer_note(edit)


def test_an_answer_sharing_almost_no_words_with_the_session_is_unrelated():
    page = "Bash Reference Manual. 3.5.3 Shell Parameter Expansion: the $ character introduces parameter expansion"
    shop = "Shop: Lamps. Desk lamp $24. Floor lamp $80. Add to cart. Checkout. Your cart is empty."
    assert unrelated(page, shop) and not unrelated(shop.replace("empty", "full"), shop) and not unrelated("", shop)


class Cut(MockBackend):
    """A scripted backend whose answers stop at the token cap."""

    async def generate(self, messages, config: GenerateConfig) -> Generation:
        out = await super().generate(messages, config)
        return out.model_copy(update={"finish_reason": "length"})


def tagged(text: str) -> str:
    return f"<predicted_observation>{text}</predicted_observation>"


def conv(current: dict, pairs=(), tools=frozenset()) -> Conversation:
    mcp = get_domain("mcp")
    from lwm.types import Action
    rendered = [(mcp.render_action(Action(content=a), i), mcp.render_observation(o)) for i, (a, o) in
                enumerate(pairs, start=1)]
    return Conversation("You simulate tools.", rendered, mcp.render_action(Action(content=current), len(rendered) + 1),
                        json_tools=tools)


CALL = {"name": "search_nodes", "arguments": {"query": "Ada"}}


def complete(backend, conversation):
    return run_sync(WorldModel(backend, cache=False).complete(conversation, get_domain("mcp")))


def test_a_loop_to_the_token_cap_is_cut_and_said():
    obs = complete(Cut([tagged("found:\n" + "- Ada\n" * 30)]), conv(CALL))
    assert obs.content == "found:\n- Ada" and obs.metadata["form"]["loop"]["period"] == 6


def test_json_is_asked_for_again_under_constraint_where_the_tool_answered_json_before():
    backend = MockBackend(lambda m: tagged("<b>Ada</b>") if not backend_configs[-1].json_only else '{"found": true}')
    backend_configs: list[GenerateConfig] = []
    original = backend.generate

    async def spy(messages, config):
        backend_configs.append(config)
        return await original(messages, config)

    backend.generate = spy
    obs = complete(backend, conv(CALL, [(CALL, '{"found": false}')]))
    assert obs.content == '{"found": true}' and obs.metadata["form"]["json"] == "constrained"
    assert [c.json_only for c in backend_configs] == [False, True]
    # a tool whose results are text is left alone
    assert complete(MockBackend([tagged("No nodes")]), conv(CALL, [(CALL, "Found nothing")])).content == "No nodes"
    # a declared output schema says JSON before any result
    obs = complete(MockBackend([tagged("No"), '{"found": 0}']), conv(CALL, tools=frozenset({"search_nodes"})))
    assert obs.content == '{"found": 0}'
    # ... but not over the session's own text results of that tool, and never for an error result
    schema = frozenset({"search_nodes"})
    assert complete(MockBackend([tagged("No nodes"), "{}"]), conv(CALL, [(CALL, "Found nothing")], schema)).content \
        == "No nodes"
    error = complete(MockBackend([tagged("Error: query is required"), "{}"]), conv(CALL, tools=schema))
    assert error.content == "Error: query is required" and "json" not in error.metadata.get("form", {})


def test_html_is_resampled_then_stripped_and_empty_answers_never_stand():
    page = tagged('<pre><code class="language-html">Ada works on lwm</code></pre>')
    obs = complete(MockBackend([page, tagged("Ada: person")]), conv(CALL))
    assert obs.content == "Ada: person" and obs.metadata["form"]["html"] == "resampled"
    obs = complete(MockBackend([page]), conv(CALL))
    assert obs.content == "Ada works on lwm" and obs.metadata["form"]["html"] == "stripped"
    obs = complete(MockBackend([tagged("")]), conv(CALL, [(CALL, "Found Ada")]))
    assert obs.content == "Found Ada" and obs.metadata["form"]["empty"] == "previous"
    obs = complete(MockBackend([tagged(""), tagged(""), tagged("Found 0 nodes")]), conv(CALL))
    assert obs.content == "Found 0 nodes" and obs.metadata["form"]["empty"] == "unguided"


def test_a_web_session_of_accessibility_trees_is_not_answered_with_markup():
    web = get_domain("web")
    tree = "# Tabs\n[0] Bash Reference Manual (active)\n\n- heading \"Bash Reference Manual\" [level=1] [ref=f1e2]"
    page = '<pre><code class="action" data-id="f2e76"></pre>\n</code>'

    def session(first: str) -> Conversation:
        return Conversation("You simulate a browser.", [(web.render_action(Action(content="goto('x')"), 1), first)],
                            web.render_action(Action(content="scroll(0, 300)"), 2))

    def answer(backend, conversation):
        return run_sync(WorldModel(backend, cache=False).complete(conversation, web))

    # markup with no text: stripped to nothing, then the empty answer falls back to the page before
    obs = answer(MockBackend([tagged(page)]), session(tree))
    assert obs.content == tree and obs.metadata["form"] == {"html": "stripped", "empty": "previous"}
    # a session whose pages are HTML keeps HTML answers, and so does a first step with nothing to go by
    html_page = "<html><body><p>Bash</p></body></html>"
    assert answer(MockBackend([tagged(page)]), session(html_page)).content == page
    first = Conversation("You simulate a browser.", [], web.render_action(Action(content="goto('x')"), 1))
    assert answer(MockBackend([tagged(page)]), first).content == page


def test_a_none_an_empty_result_or_an_error_does_not_turn_the_json_rule_off():
    """An outside session of unseen Python tools had JSON results and two tools that return nothing (``None``): the
    rule went off after the ``None`` and the model answered paths, command lines and markup. What says nothing of
    a tool's form is passed over, and a tool never called goes by the session's other tools' results."""
    assert expects_json(['{"x": 1}', "None"], [], False) and expects_json(['[1, 2]', "", "null"], [], False)
    assert expects_json(['{"x": 1}', "Error: KeyError: 'y'"], [], False)
    assert not expects_json(["plain text", "None"], [], False)
    assert expects_json(["None"], [], True)  # nothing told: the schema decides
    # a tool never called: the session's other results, when at least two tell and every one is JSON
    assert expects_json([], [], False, ['{"a": 1}', "None", "[3]"])
    assert not expects_json([], [], False, ['{"a": 1}', "None"])  # one result is not enough to go by
    assert not expects_json([], [], False, ['{"a": 1}', "hello", "[3]"])
    assert not expects_json(["text"], [], False, ['{"a": 1}', "[3]"])  # the tool's own result comes first


def test_an_answer_that_writes_the_action_back_is_an_echo():
    call = '{\n  "name": "push", "arguments": {"item": "milk", "qty": 2}\n}'
    assert echoes('{"item": "milk", "qty": 2}', call) and echoes('{"name": "push", "arguments": {"item": "milk", '
                                                                  '"qty": 2}}', call)
    assert echoes("ls -la", "ls -la") and not echoes("", call)
    assert not echoes('"milk"', call) and not echoes('{"item": "milk"}', call)  # one argument back may be the result
    assert not echoes("{}", '{"name": "pop", "arguments": {}}')


ECHO_CALL = {"name": "push", "arguments": {"item": "milk"}}


def test_an_echoed_action_is_sampled_again_then_asked_for_as_json_and_said():
    echo = tagged('{"item": "milk"}')
    obs = complete(MockBackend([echo, tagged("Pushed milk")]), conv(ECHO_CALL))
    assert obs.content == "Pushed milk" and obs.metadata["form"]["echo"] == "resampled"
    # where the session's results say JSON, the second answer is JSON-constrained
    pairs = [({"name": "size", "arguments": {}}, '{"size": 0}'), ({"name": "peek", "arguments": {}}, "None"),
             ({"name": "list", "arguments": {}}, "[]"), ({"name": "clear", "arguments": {}}, '{"cleared": 0}')]
    configs: list[GenerateConfig] = []
    backend = MockBackend(lambda m: '{"size": 1}' if configs[-1].json_only else echo)
    original = backend.generate

    async def spy(messages, config):
        configs.append(config)
        return await original(messages, config)

    backend.generate = spy
    obs = complete(backend, conv(ECHO_CALL, pairs))
    assert obs.content == '{"size": 1}' and obs.metadata["form"] == {"echo": "json"}
    assert [c.json_only for c in configs] == [False, True]
    # an echo again is kept, and said
    obs = complete(MockBackend([echo]), conv(ECHO_CALL))
    assert obs.content == '{"item": "milk"}' and obs.metadata["form"]["echo"] == "kept"
    assert "wrote the action back" in answer_note(obs.metadata)
