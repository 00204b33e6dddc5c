"""Every domain: actions checked, a multi-turn history rendered, answers parsed (broken ones too)."""

import json

import pytest

from lwm.domains import ActionError, domain_names, get_domain
from lwm.domains.base import output_shape, render_tools
from lwm.types import Context
from lwm.worldmodel import WorldModel
from tests.samples import BAD_ACTIONS, SAMPLES, trajectory

DOMAINS = ["mcp", "search", "terminal", "swe", "web", "os", "android"]


def test_all_seven_domains_are_registered():
    assert sorted(DOMAINS) == domain_names()


@pytest.mark.parametrize("name", DOMAINS)
def test_history_renders_in_agentworldbench_turn_style(name):
    domain = get_domain(name)
    t = trajectory(name)
    action = domain.action(SAMPLES[name][0][0])
    prompt = WorldModel("mock", cache=False).build_prompt(t, action)
    roles = [m["role"] for m in prompt.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    fence = "python" if domain.action_language == "python" else "json"
    for k, msg in enumerate(prompt.messages[1::2], start=1):
        assert msg["content"].startswith(f"### Turn {k}\n\n**Action:**\n```{fence}\n")
        assert msg["content"].endswith("\n```")
    for msg, (_, obs) in zip(prompt.messages[2::2], SAMPLES[name], strict=False):
        assert msg["content"] == f"**Environment Observation:**\n{obs}"
    assert "<predicted_observation>" in prompt.messages[0]["content"]


@pytest.mark.parametrize("name", DOMAINS)
def test_actions_are_checked(name):
    domain = get_domain(name)
    for content, _ in SAMPLES[name]:
        assert domain.action(content).content is not None
    with pytest.raises(ActionError):
        domain.action(BAD_ACTIONS[name])


@pytest.mark.parametrize("name", DOMAINS)
def test_action_from_text_round_trips_the_rendered_form(name):
    domain = get_domain(name)
    action = domain.action(SAMPLES[name][1][0])
    assert domain.action_from_text(domain.format_action(action)) == action


@pytest.mark.parametrize("name", [d for d in DOMAINS if get_domain(d).action_language == "json"])
def test_bad_json_names_the_expected_format(name):
    with pytest.raises(ActionError, match="JSON"):
        get_domain(name).action_from_text("{not json")


@pytest.mark.parametrize("name", DOMAINS)
@pytest.mark.parametrize(
    "raw, expected",
    [
        ("<think>state…</think><predicted_observation>\nOBS\n</predicted_observation>", "OBS"),
        ("<predicted_observation>OBS", "OBS"),
        ("<think>a<think>b</think>c</think><predicted_observation>OBS</predicted_observation>", "OBS"),
        ("<think>cut off", ""),
        ("", ""),
    ],
)
def test_answers_parse_including_broken_ones(name, raw, expected):
    assert get_domain(name).parse(raw).content == expected


@pytest.mark.parametrize("name", DOMAINS)
def test_full_and_compact_system_prompts_carry_the_context(name):
    domain = get_domain(name)
    context = Context(task="find the answer", tools=[{"name": "tool_a", "description": "does A\nmore",
                                                      "inputSchema": {"properties": {"x": {}, "y": {}}}}],
                      initial_state="START-STATE")
    full = domain.system_prompt(context)
    compact = domain.system_prompt(context, compact=True)
    assert len(compact) < len(full)
    for text in (full, compact):
        assert "find the answer" in text and "START-STATE" in text and "tool_a" in text
        assert "{context}" not in text and "{answer_format}" not in text
    assert "- tool_a(x, y): does A" in compact
    assert '"inputSchema"' in full
    judge = domain.judge_prompt()
    assert "<final_evaluation>" in judge and "factuality" in judge and "{rubric}" not in judge


def test_compact_tools_say_what_a_tool_returns_when_its_server_declares_it():
    """An MCP ``outputSchema`` becomes a value skeleton on the tool's line: the shape of a first result of a
    tool the world model never saw (sequential-thinking's server declares one)."""
    tool = {"name": "think", "description": "Thinks.", "inputSchema": {"properties": {"thought": {}}},
            "outputSchema": {"type": "object", "properties": {
                "n": {"type": "number"}, "done": {"type": ["boolean", "null"]},
                "branches": {"type": "array", "items": {"type": "string"}},
                "mode": {"enum": ["a", "b"]}, "meta": {"type": "object", "properties": {"k": {}}}}}}
    line = render_tools([tool], compact=True)
    assert line == ('- think(thought) -> {"n": number, "done": boolean, "branches": [string], '
                    '"mode": "a" | "b", "meta": {"k": value}}: Thinks.')
    assert render_tools([{**tool, "outputSchema": None}], compact=True) == "- think(thought): Thinks."
    ref = {"properties": {"source": {"$ref": "#/$defs/T"}}, "$defs": {"T": {"properties": {"tz": {"type": "string"}}}}}
    assert output_shape(ref) == '{"source": {"tz": string}}'
    assert output_shape({"type": "array"}) == "[]"


def test_data_carried_system_prompt_wins():
    assert get_domain("mcp").system_prompt(Context(system_prompt="FROM DATA")) == "FROM DATA"


def test_prompts_dir_in_qwen_layout(tmp_path):
    (tmp_path / "terminal").mkdir()
    (tmp_path / "terminal" / "system_prompt.txt").write_text("PUBLISHED TERMINAL PROMPT {\"json\": 1}")
    (tmp_path / "terminal" / "judge_system_prompt.txt").write_text("PUBLISHED JUDGE")
    domain = get_domain("terminal")
    text = domain.system_prompt(Context(task="T1"), prompts_dir=tmp_path)
    assert text.startswith('PUBLISHED TERMINAL PROMPT {"json": 1}') and text.endswith("T1")
    assert domain.system_prompt(Context(task="T1"), compact=True, prompts_dir=tmp_path).startswith("PUBLISHED")
    assert domain.judge_prompt(tmp_path) == "PUBLISHED JUDGE"
    with pytest.raises(FileNotFoundError, match="mcp"):
        get_domain("mcp").system_prompt(Context(), prompts_dir=tmp_path)


@pytest.mark.parametrize(
    "name, line, expected",
    [
        ("terminal", "ls -la", [{"keystrokes": "ls -la\n", "duration": 0.5}]),
        ("terminal", "C-c", [{"keystrokes": "C-c", "duration": 0.1}]),
        ("mcp", 'read_file {"path": "/a"}', {"name": "read_file", "arguments": {"path": "/a"}}),
        ("mcp", "read_graph", {"name": "read_graph", "arguments": {}}),
        ("swe", "pytest -q", {"name": "bash", "arguments": {"command": "pytest -q"}}),
        ("search", "open https://x.org", {"name": "web_extractor", "arguments": {"url": "https://x.org"}}),
        ("search", "asyncio timeout", {"name": "web_search", "arguments": {"query": "asyncio timeout"}}),
        ("android", "tap 10 20", {"action": "tap", "x": 10, "y": 20}),
        ("android", "type hello world", {"action": "type", "text": "hello world"}),
        ("web", "click('4')", "click('4')"),
        ("os", "print(1)", "print(1)"),
    ],
)
def test_shell_lines_become_actions(name, line, expected):
    assert get_domain(name).from_shell(line).content == expected


def test_tool_call_spellings_are_normalized():
    mcp = get_domain("mcp")
    openai_style = {"function": {"name": "f", "arguments": json.dumps({"a": 1})}}
    assert mcp.action(openai_style).content == {"name": "f", "arguments": {"a": 1}}
    assert mcp.action({"tool": "f", "args": {"a": 1}}).content == {"name": "f", "arguments": {"a": 1}}
    with pytest.raises(ActionError, match="not valid JSON"):
        mcp.action({"name": "f", "arguments": "{bad"})


def test_every_domain_says_its_action_kind_and_each_builtin_has_a_real_environment():
    """Code that drives any domain asks `action_kind`, never the domain's name; lwm's own domains all get a
    real gym id because each has a real environment (`import lwm` does not import them to check)."""
    from lwm.domains import domain_names, get_domain
    from lwm.registry import names

    kinds = {name: get_domain(name).action_kind for name in domain_names()}
    assert kinds["terminal"] == "keystrokes" and kinds["web"] == kinds["os"] == "code"
    assert kinds["mcp"] == kinds["search"] == kinds["swe"] == "tool_call" and kinds["android"] == "ui"
    assert set(domain_names()) <= set(names("env"))


def test_no_module_outside_the_domains_branches_on_a_domain_name():
    """Adding a domain touches its module and prompts; a literal like `== "terminal"` elsewhere is a branch
    that a new domain would have to be added to (task suites, which are per domain, are the exception)."""
    import re
    from pathlib import Path

    import lwm

    root = Path(lwm.__file__).parent
    allowed = {"domains", "envs", "collect", "provision", "prompts"}  # per-domain code by design
    allowed_files = {"agent/policy.py", "rollout/tasks.py", "rollout/task_env.py", "cli/agent.py", "serve/mcp.py",
                     "agent/suite_build.py", "agent/search_suite.py", "agent/state_suites.py"}  # task suites and the MCP mirror are one domain's own
    pattern = re.compile(r"""(==|!=)\s*["'](terminal|mcp|search|web|os|swe|android)["']""")
    assert pattern.search('if domain == "terminal":') and not pattern.search('if domain.action_kind == "code":')
    found = [f"{p.relative_to(root)}:{n}" for p in root.rglob("*.py")
             if p.relative_to(root).parts[0] not in allowed and str(p.relative_to(root)) not in allowed_files
             for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []
