import json

import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import TimeLimit

from lwm.backends import MockBackend
from lwm.envs import SimEnv
from lwm.types import Context
from lwm.worldmodel import WorldModel
from tests.samples import SAMPLES

TOOLS = [{"name": "read_graph", "description": "Read the graph", "inputSchema": {"type": "object"}}]


def make(domain: str, **context) -> SimEnv:
    return SimEnv(WorldModel(MockBackend(), cache=False), domain, Context(**context))


@pytest.mark.parametrize("domain, context", [("terminal", {}), ("mcp", {"tools": TOOLS})])
def test_check_env_passes(domain, context):
    env = make(domain, **context)
    check_env(env, skip_render_check=True)


@pytest.mark.parametrize("domain", ["search", "swe", "web", "os", "android"])
def test_check_env_passes_for_the_other_domains(domain):
    check_env(make(domain), skip_render_check=True)


def test_episode_records_the_trajectory():
    env = make("terminal")
    obs, info = env.reset(seed=3)
    assert obs == "user@sandbox:~$ " and info["turn"] == 0
    action = json.dumps(SAMPLES["terminal"][0][0])
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs.startswith("mock observation") and info["turn"] == 1 and info["model"] == "mock"
    env.step(SAMPLES["terminal"][1][0])  # decoded content works too
    assert len(env.trajectory.turns) == 2
    assert env.trajectory.provenance.source == "simulated"
    assert env.config.seed == 3 and env.world_model.config.seed == 0  # the episode's seed, not the shared model's


def test_envs_sharing_a_world_model_sample_with_their_own_seeds():
    seen = []

    class Recording(MockBackend):
        async def generate(self, messages, config):
            seen.append(config.seed)
            return await super().generate(messages, config)

    wm = WorldModel(Recording(), cache=False)
    first, second = SimEnv(wm, "terminal"), SimEnv(wm, "terminal")
    first.reset(seed=1)
    second.reset(seed=2)
    first.step(SAMPLES["terminal"][0][0])
    second.step(SAMPLES["terminal"][0][0])
    assert seen == [1, 2] and wm.config.seed == 0


def test_a_session_continues_from_a_trajectory():
    env = make("terminal")
    env.reset()
    env.step(SAMPLES["terminal"][0][0])
    earlier = env.trajectory
    again = make("terminal")
    obs, info = again.reset(options={"trajectory": earlier})
    assert obs == earlier.turns[-1].observation.content and info["turn"] == 1
    again.step(SAMPLES["terminal"][1][0])
    assert again.trajectory.turns[0] == earlier.turns[0] and len(again.trajectory.turns) == 2
    with pytest.raises(ValueError, match="cannot continue a terminal session"):
        make("mcp").reset(options={"trajectory": earlier})
    env.reset()
    assert env.trajectory.turns == []


def test_history_reaches_the_world_model():
    backend = MockBackend()
    env = SimEnv(WorldModel(backend, cache=False), "mcp", Context(tools=TOOLS))
    env.reset()
    env.step('{"name": "read_graph", "arguments": {}}')
    env.step('{"name": "read_graph", "arguments": {}}')
    assert [m["role"] for m in backend.calls[1]] == ["system", "user", "assistant", "user"]


def test_invalid_action_gets_an_error_observation_not_an_exception():
    env = make("terminal")
    env.reset()
    obs, reward, terminated, truncated, info = env.step("rm -rf /")
    assert obs.startswith("Error: invalid action") and "JSON" in info["invalid_action"]
    assert env.trajectory.turns == []


def test_reset_options_replace_the_context():
    env = make("terminal")
    obs, _ = env.reset(options={"context": {"initial_state": "root@box:/# "}})
    assert obs == "root@box:/# "


def test_time_limit_wrapper_truncates():
    env = TimeLimit(make("terminal"), max_episode_steps=2)
    env.reset()
    step = json.dumps(SAMPLES["terminal"][0][0])
    assert env.step(step)[3] is False
    assert env.step(step)[3] is True


def test_the_simulated_terminal_starts_at_the_real_terminals_prompt():
    from lwm.domains import get_domain
    from lwm.envs.real.terminal import PS1

    assert get_domain("terminal").initial_state == PS1.replace("\\w", "~")
