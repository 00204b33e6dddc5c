import random

import pytest

from lwm.collect.explorers.swe import SWEExplorer
from lwm.collect.explorers.terminal import TerminalExplorer
from lwm.domains import get_domain
from lwm.types import Context

SCREEN = "user@sandbox:~$ ls\nnotes.txt  run.py  data.csv\nuser@sandbox:~$"
LISTING = "README.md\ncalc/\npyproject.toml\ntests/"


@pytest.mark.parametrize("explorer, domain, first", [(TerminalExplorer, "terminal", SCREEN),
                                                     (SWEExplorer, "swe", LISTING)])
def test_actions_are_valid_and_reproducible_from_a_seed(explorer, domain, first):
    def episode(seed):
        e = explorer()
        e.start(random.Random(seed), Context(), first)
        return [e.act(first) for _ in range(40)]

    actions = episode(7)
    assert actions == episode(7) and actions != episode(8)
    for action in actions:
        get_domain(domain).action(action)  # every action fits the domain's format


def test_terminal_explorer_uses_files_it_has_seen_and_makes_mistakes():
    e = TerminalExplorer(mistake_rate=0.3)
    e.start(random.Random(1), Context(), SCREEN)
    typed = " ".join(a[0]["keystrokes"] for a in (e.act(SCREEN) for _ in range(200)))
    assert "run.py" in typed or "data.csv" in typed or "notes.txt" in typed
    assert "No" not in typed and ("sl\n" in typed or "cat " in typed)
    assert "C-c" in " ".join(str(a) for a in [e.act(SCREEN) for _ in range(300)])


def test_swe_explorer_lists_directories_before_reading_code():
    e = SWEExplorer()
    e.start(random.Random(0), Context(), LISTING)
    e.listed.add(".")
    first = e.act(LISTING)
    assert first == {"name": "list_dir", "arguments": {"path": "calc"}}
    second = e.act("__init__.py\nops.py")
    assert "calc/ops.py" in e.files and "calc/__init__.py" in e.files and second["name"]


def test_mcp_explorer_fills_arguments_from_the_schema_and_earlier_results():
    from lwm.collect.explorers.mcp import MCPExplorer

    tools = [{"name": "add", "inputSchema": {"type": "object", "required": ["who", "count"], "properties": {
        "who": {"type": "string"}, "count": {"type": "integer", "minimum": 1, "maximum": 3},
        "mode": {"enum": ["fast", "slow"]}, "tags": {"type": "array", "items": {"type": "string"}}}}}]
    e = MCPExplorer(mistake_rate=0.0)
    e.start(random.Random(3), Context(tools=tools), '{"id": "order-77", "owner": "Ada"}')
    calls = [e.act("") for _ in range(50)]
    assert all(c["name"] == "add" and {"who", "count"} <= set(c["arguments"]) for c in calls)
    assert all(1 <= c["arguments"]["count"] <= 3 for c in calls)
    assert {"order-77", "Ada"} & {c["arguments"]["who"] for c in calls}
    assert all(c["arguments"].get("mode", "fast") in {"fast", "slow"} for c in calls)


TIME_TOOLS = [
    {"name": "get_current_time", "inputSchema": {"type": "object", "required": ["timezone"],
                                                 "properties": {"timezone": {"type": "string"}}}},
    {"name": "convert_time", "inputSchema": {"type": "object", "required": ["source_timezone", "time", "target_timezone"],
                                             "properties": {k: {"type": "string"} for k in ("source_timezone", "time",
                                                                                           "target_timezone")}}}]


def test_the_plain_mcp_explorer_is_unchanged_so_corpus_v1_collects_as_before():
    """A golden sequence (the explorer as corpus-v1 was collected with): random words where the schema says
    string, deliberate mistakes included. The agent-like explorer is a separate one."""
    from lwm.collect.explorers.mcp import MCPExplorer

    e = MCPExplorer(mistake_rate=0.15)
    e.start(random.Random(11), Context(tools=TIME_TOOLS), "")
    assert [e.act("") for _ in range(4)] == [
        {"name": "convert_time", "arguments": {"source_timezone": "index", "time": "backup",
                                               "target_timezone": "sample_9"}},
        {"name": "get_current_time_v2", "arguments": {"timezone": "delta"}},
        {"name": "get_current_time", "arguments": {"timezone": "log"}},
        {"name": "get_current_time", "arguments": {}}]


def test_the_agent_like_mcp_explorer_sends_what_an_agent_would_where_a_schema_says_only_string():
    """A code runner's schema says `code: string`, a time server's `timezone: string`; a random word there is
    an error no agent makes."""
    from lwm.collect.explorers.mcp import TIMEZONES, AgentLikeMCPExplorer

    tools = [{"name": "run-code", "inputSchema": {"type": "object", "required": ["code", "languageId"], "properties": {
        "code": {"type": "string"}, "languageId": {"enum": ["javascript", "python", "ocaml", "swift"]}}}}]
    e = AgentLikeMCPExplorer(mistake_rate=0.0)
    e.start(random.Random(5), Context(tools=tools), "")
    calls = [e.act("")["arguments"] for _ in range(200)]
    runnable = [c for c in calls if c["languageId"] in ("python", "javascript", "shellscript", "perl")
                and any(word in c["code"] for word in ("print", "console.log", "echo"))]
    assert 0.75 < len(runnable) / len(calls) < 0.95  # mostly real code; schema-drawn calls stay a minority
    assert len({c["code"] for c in runnable}) > 20  # the examples vary
    e.start(random.Random(5), Context(tools=TIME_TOOLS), "")
    zones = [v for c in (e.act("") for _ in range(100)) for k, v in c["arguments"].items() if "timezone" in k]
    assert sum(z in TIMEZONES for z in zones) / len(zones) > 0.75


def test_search_explorer_opens_urls_it_has_seen():
    from lwm.collect.explorers.search import SearchExplorer

    results = "A search for 'x' found 1 results:\n\n## Web Results\n1. [fork](https://man7.org/fork.2.html)\nDate: N/A\nfork"
    e = SearchExplorer(mistake_rate=0.0)
    e.start(random.Random(2), Context(), results)
    calls = [e.act(results) for _ in range(60)]
    assert {"name": "web_extractor", "arguments": {"url": "https://man7.org/fork.2.html"}} in calls
    assert {c["name"] for c in calls} == {"web_search", "web_extractor", "dict_memory"}
    for c in calls:
        get_domain("search").action(c)


@pytest.mark.parametrize("module, domain, observation", [
    ("web", "web", '- link "Products" [ref=e5]\n- textbox "Username" [ref=e9]\n- checkbox "Remember me" [ref=e11]'),
    ("os", "os", "application 'mousepad'\n  menu 'File' (0, 0, 39, 25)\n  text '' (1, 52, 638, 425) editable"),
])
def test_ui_explorers_act_on_what_the_screen_shows(module, domain, observation):
    import importlib

    cls = {"web": "WebExplorer", "os": "OSExplorer"}[module]
    explorer = getattr(importlib.import_module(f"lwm.collect.explorers.{module}"), cls)(mistake_rate=0.1)
    explorer.start(random.Random(5), Context(), observation)
    actions = [explorer.act(observation) for _ in range(40)]
    for action in actions:
        get_domain(domain).action(action)
    joined = "\n".join(actions)
    assert ("e5" in joined or "e9" in joined) if domain == "web" else ("click(19, 12)" in joined or "click(320, 264)" in joined)
