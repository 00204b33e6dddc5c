"""Real Python APIs as MCP tools: schemas from signatures and docstrings, calls bound to them, and the server
through the real MCP environment (sandboxed, over stdio), where a stateful group keeps its object between calls."""

import collections
import inspect
import json
import random
import statistics
import textwrap

import pytest

from lwm.collect.explorers.mcp import PythonToolsExplorer
from lwm.envs.real.mcp import MCPEnv
from lwm.envs.real.pytools import plain, render, run_call
from lwm.envs.real.pytools_catalog import (
    FUNCTION_MODULES,
    SLICES,
    STATEFUL,
    Group,
    as_tool,
    available,
    call_tool,
    description,
    doc_examples,
    groups,
)
from lwm.types import Context
from tests.envs.real.conftest import needs_sandbox

pytest.importorskip("mcp")


def test_a_schema_says_what_the_signature_and_the_docstring_say():
    median = as_tool("median", statistics.median, "statistics.median")
    assert median.input_schema["properties"]["data"] == {"type": "array", "items": {"type": "number"}}
    assert median.input_schema["required"] == ["data"]
    assert {"data": [1, 3, 5]} in median.input_schema["examples"]  # the docstring's own call
    assert median.description.startswith("Return the median (middle value) of numeric data.")
    fill = as_tool("fill", textwrap.fill, "textwrap.fill")
    assert fill.input_schema["properties"]["width"] == {"type": "integer", "default": 70}  # the default's type
    assert fill.input_schema["properties"]["text"]["type"] == "string"  # the name's

    def annotated(count: int, ratio: float | None = None, tags: list[str] = ()) -> dict:  # noqa: B006
        """Scale things.

        More words that the description leaves out."""

    tool = as_tool("annotated", annotated, "x.annotated")
    assert tool.input_schema["properties"]["count"] == {"type": "integer"}
    assert tool.input_schema["properties"]["ratio"] == {"type": ["number", "null"], "default": None}
    assert tool.input_schema["properties"]["tags"] == {"type": "array", "items": {"type": "string"}, "default": []}
    assert tool.description == "Scale things."


def test_docstring_calls_become_examples_only_when_their_arguments_are_literals():
    def f(a, b=2):
        """>>> f(1, b=3)
        >>> f(x)
        >>> f([1, 2])
        >>> f(1, 2, 3)
        """

    assert doc_examples("f", f, inspect.signature(f)) == [{"a": 1, "b": 3}, {"a": [1, 2]}]
    assert description(len) == "Return the number of items in a container."


def test_calls_bind_json_arguments_and_report_the_functions_own_errors():
    queue = Group("queue", "collections", "collections", STATEFUL["queue"][1]).tools()
    tools = {t.name: t for t in queue}
    assert {"append", "popleft", "rotate", "extend"} <= set(tools)  # builtin methods, from their documentation
    call_tool(tools["append"], {"x": "milk"})
    call_tool(tools["extend"], {"iterable": ["eggs", "tea"]})
    assert run_call(tools["popleft"], {}) == ("milk", False)
    assert run_call(tools["count"], {"value": "tea"}) == ("1", False)
    text, error = run_call(tools["append"], {"y": 1})
    assert error and text.startswith("Error: TypeError") and "y" in text
    b64 = {t.name: t for t in available(["base64"])[0]["base64"].tools()}["b64encode"]
    assert run_call(b64, {"s": "hello"}) == ("aGVsbG8=", False)  # text where bytes are wanted: UTF-8


def test_results_render_as_python_mcp_servers_answer():
    assert render("plain text") == "plain text" and render(None) == "null" and render(4.0) == "4.0"
    assert render([1, 2]) == "[1, 2]" and json.loads(render({"a": [1]})) == {"a": [1]}
    assert render(statistics.linear_regression([1, 2, 3], [2, 4, 6])) .startswith('{\n  "slope": 2.0')
    assert plain(iter(range(1000))) == list(range(100))  # an iterator, cut
    assert plain({"b": 1, "a": 2}.keys()) == ["a", "b"] and plain(collections.deque([1, 2])) == [1, 2]
    assert plain({3, 1, 2}) == [1, 2, 3] and plain(float("inf")) == "inf" and plain(b"\xff") == "/w=="
    printer = as_tool("p", lambda text: print(text.upper()), "x.p")
    assert run_call(printer, {"text": "hi"}) == ("HI", False)  # what a function prints is its answer


def test_the_catalogue_holds_thousands_of_tools_and_says_what_it_cannot_serve():
    found, missing = available(["statistics", "queue", "no-such-group"])
    assert set(found) == {"statistics", "queue"} and "unknown group" in missing["no-such-group"]
    assert len(groups()) == len(FUNCTION_MODULES) - len(SLICES) + sum(SLICES.values()) + len(STATEFUL)
    every, _ = available()
    assert sum(len(g.tools()) for g in every.values()) >= 1000  # the standard library alone has more
    # a module with hundreds of tools comes in slices that cover it once
    whole = Group("math", "math", "math").tools()
    parts = [every[f"math-{k}"].tools() for k in range(1, SLICES["math"] + 1)]
    assert [t.name for part in parts for t in part] == [t.name for t in whole] and all(len(p) < 40 for p in parts)
    assert all(g.package for g in every.values())


def test_the_python_explorer_sends_docstring_calls_and_required_arguments():
    explorer = PythonToolsExplorer(mistake_rate=0.0)
    explorer.start(random.Random(0), Context(tools=[as_tool("median", statistics.median, "s.m").listing(),
                                                    as_tool("fill", textwrap.fill, "t.f").listing()]), "")
    calls = [explorer.act("") for _ in range(40)]
    medians = [c["arguments"] for c in calls if c["name"] == "median"]
    fills = [c["arguments"] for c in calls if c["name"] == "fill"]
    assert medians and all(isinstance(a["data"], list) for a in medians)
    assert any(a in ({"data": [1, 3, 5]}, {"data": [1, 3, 5, 7]}) for a in medians)
    assert fills and all(isinstance(a["text"], str) for a in fills)
    assert sum(len(a) > 1 for a in fills) < len(fills)  # optional arguments now and then, not always


@needs_sandbox
def test_a_group_served_over_mcp_answers_from_the_real_code_and_keeps_its_object():
    env = MCPEnv(preset="pytools:queue")
    try:
        env.reset(seed=0)
        assert env.trajectory.provenance.environment == "mcp:pytools-collections"  # held out by package
        assert "double-ended queue" in env.trajectory.context.extra["server_instructions"]
        for call, expected in ((("append", {"x": "milk"}), "null"), (("extend", {"iterable": [1, 2]}), "null"),
                               (("popleft", {}), "milk"), (("pop", {}), "2"), (("count", {"value": 1}), "1")):
            obs, _, _, _, info = env.step(json.dumps({"name": call[0], "arguments": call[1]}))
            assert obs == expected and info["tool_error"] is False
        obs, _, _, _, info = env.step(json.dumps({"name": "rotate", "arguments": {"n": "x"}}))
        assert info["tool_error"] is True and obs.startswith("Error: TypeError")
    finally:
        env.close()
    env = MCPEnv(preset="pytools:statistics")
    try:
        env.reset(seed=0)
        obs, *_ = env.step(json.dumps({"name": "median", "arguments": {"data": [1, 3, 5, 9]}}))
        assert obs == "4.0"
    finally:
        env.close()


def test_an_unknown_pytools_group_is_a_clear_error():
    env = MCPEnv(preset="pytools:no-such-group")
    try:
        with pytest.raises(RuntimeError, match="failed to start"):
            env.reset()
    finally:
        env.close()
