"""The LLM agent policy, through the real scripted OpenAI-compatible server and a real terminal."""

from typer.testing import CliRunner

from lwm.cli import app
from lwm.collect.policies import AgentPolicy
from lwm.data import read_trajectories
from lwm.rollout.loop import Episode, parse_reply, system_prompt
from lwm.testing.openai_server import ScriptedServer
from lwm.types import Context
from tests.envs.real.conftest import needs_sandbox, needs_tmux

ANSWERS = ["I will list the files.\n```json\n[{\"keystrokes\": \"ls -la\\n\", \"duration\": 0.3}]\n```",
           "Sorry, I cannot decide.",
           "```json\n[{\"keystrokes\": \"echo agent > a.txt && cat a.txt\\n\", \"duration\": 0.3}]\n```"]


def exploring(observation: str, seed: int = 0) -> Episode:
    """An exploring episode as the loop starts it, with the task "make a file"."""
    context = Context(task="make a file")
    return Episode(None, domain="terminal", seed=seed, context=context, observation=observation, messages=[
        {"role": "system", "content": system_prompt("terminal", "make a file", [])},
        {"role": "user", "content": observation}])


def step(agent: AgentPolicy, episode: Episode, observation: str) -> object:
    """The agent's next action in ``episode``, the loop's way: its reply, then the observation that follows."""
    reply = agent.act([episode])[0]
    episode.messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": observation}]
    episode.observation = observation
    return parse_reply(reply, "terminal").content


def test_agent_parses_fenced_actions_and_falls_back_on_nonsense():
    with ScriptedServer(ANSWERS) as server:
        agent = AgentPolicy("terminal", "openai:scripted", base_url=server.base_url)
        episode = exploring("user@sandbox:~$")
        first = step(agent, episode, "user@sandbox:~$ ls -la\ntotal 0\nuser@sandbox:~$")
        second = step(agent, episode, "user@sandbox:~$")
        third = step(agent, episode, "user@sandbox:~$")
        sent = server.requests[-1]["messages"]
    assert first == [{"keystrokes": "ls -la\n", "duration": 0.3}]
    assert isinstance(second, list) and agent.fallbacks == 1  # the heuristic explorer stepped in
    assert agent.acted == 2
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
    assert "the agent chose 2 of 2 actions" in " ".join(result.output.split())
    (trajectory,) = read_trajectories(tmp_path)
    assert trajectory.provenance.extra["policy"] == "llm-agent:openai:scripted"
    assert "agent" in trajectory.turns[1].observation.content


def test_a_local_model_agent_samples_reproducibly_per_episode_and_its_nonsense_falls_back(tiny_model_dir):
    def first_reply(seed: int) -> str:
        agent = AgentPolicy("terminal", f"hf:{tiny_model_dir}", max_tokens=12, temperature=1.0)
        agent._seed(exploring("user@sandbox:~$", seed))
        return agent.model.reply([[{"role": "user", "content": "user@sandbox:~$"}]])[0]

    assert first_reply(7) == first_reply(7) != first_reply(8)  # sampled, seeded by the episode
    agent = AgentPolicy("terminal", f"hf:{tiny_model_dir}", max_tokens=12)
    action = step(agent, exploring("user@sandbox:~$", 7), "")  # a random tiny model writes no action: the explorer
    assert action and agent.name == f"llm-agent:hf:{tiny_model_dir}" and (agent.acted, agent.fallbacks) == (0, 1)
