"""The LLM agent policy, through the real scripted OpenAI-compatible server and a real terminal."""

import random

from typer.testing import CliRunner

from lwm.cli import app
from lwm.collect.agent import AgentPolicy
from lwm.data import read_trajectories
from lwm.testing.openai_server import ScriptedServer
from lwm.types import Context
from tests.envs.real.conftest import needs_sandbox, needs_tmux

ANSWERS = ["I will list the files.\n```json\n[{\"keystrokes\": \"ls -la\\n\", \"duration\": 0.3}]\n```",
           "Sorry, I cannot decide.",
           "```json\n[{\"keystrokes\": \"echo agent > a.txt && cat a.txt\\n\", \"duration\": 0.3}]\n```"]


def test_agent_parses_fenced_actions_and_falls_back_on_nonsense():
    with ScriptedServer(ANSWERS) as server:
        agent = AgentPolicy("terminal", "openai:scripted", base_url=server.base_url)
        agent.start(random.Random(0), Context(task="make a file"), "user@sandbox:~$")
        first = agent.act("user@sandbox:~$")
        second = agent.act("user@sandbox:~$ ls -la\ntotal 0\nuser@sandbox:~$")
        third = agent.act("user@sandbox:~$")
        sent = server.requests[-1]["messages"]
    assert first == [{"keystrokes": "ls -la\n", "duration": 0.3}]
    assert isinstance(second, list) and agent.fallbacks == 1  # the heuristic explorer stepped in
    assert third[0]["keystrokes"] == "echo agent > a.txt && cat a.txt\n"
    assert "Task: make a file" in sent[0]["content"] and sent[-1]["role"] == "user"
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "user", "assistant", "user"]


@needs_sandbox
@needs_tmux
def test_collect_with_an_agent_policy(tmp_path):
    with ScriptedServer([ANSWERS[0], ANSWERS[2]]) as server:
        result = CliRunner().invoke(app, ["collect", "--domain", "terminal", "--episodes", "1", "--max-steps", "2",
                                          "--policy", "agent:openai:scripted", "--base-url", server.base_url,
                                          "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (trajectory,) = read_trajectories(tmp_path)
    assert trajectory.provenance.extra["explorer"] == "llm-agent:openai:scripted"
    assert "agent" in trajectory.turns[1].observation.content
