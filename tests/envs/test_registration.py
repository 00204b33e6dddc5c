"""gymnasium.make / make_vec for lwm's domains, checked with Gymnasium's own env checker."""

import shutil

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import lwm  # noqa: F401 - registers the ids
from lwm.data import read_trajectories
from lwm.envs.registration import gym_names
from lwm.testing.openai_server import ScriptedServer

NAMES = {"terminal": "Terminal", "mcp": "MCP", "search": "Search", "web": "Web", "os": "OS", "swe": "SWE",
         "android": "Android"}

LS = '[{"keystrokes": "ls\\n"}]'


@pytest.mark.filterwarnings("ignore:.*render")
@pytest.mark.parametrize("domain", sorted(NAMES))
def test_every_domain_is_registered_and_passes_the_env_checker(domain):
    env = gym.make(f"lwm/{NAMES[domain]}-v0", model="mock")
    check_env(env.unwrapped, skip_render_check=True)
    assert f"lwm/{NAMES[domain]}-real-v0" in gym.registry
    env.close()


def test_gym_ids_follow_from_the_domain_classes():
    assert {d: n for d, n in gym_names().items() if d in NAMES} == NAMES


def test_a_made_env_records_and_truncates_inside_the_recorder(tmp_path):
    env = gym.make("lwm/Terminal-v0", model="mock", store=tmp_path / "store", max_turns=2)
    env.reset(seed=0)
    assert env.step(LS)[3] is False
    assert env.step(LS)[3] is True  # truncated at max_turns, and so recorded
    (recorded,) = read_trajectories(tmp_path / "store")
    assert len(recorded.turns) == 2 and recorded.provenance.source == "simulated"


def test_the_vector_env_shares_one_model_and_sends_its_steps_together():
    with ScriptedServer(latency=0.3) as server:
        vec = gym.make_vec("lwm/Terminal-v0", num_envs=4, vectorization_mode="vector_entry_point",
                           model="openai:scripted", base_url=server.base_url)
        observations, _ = vec.reset(seed=0)
        assert observations == ("user@sandbox:~$ ",) * 4
        observations, rewards, terminated, truncated, info = vec.step((LS, LS, "not json", LS))
        vec.close()
        assert server.max_in_flight == 3  # three valid actions, all in flight at once
    assert observations[2].startswith("Error: invalid action") and info["_invalid_action"][2]
    assert all(o.startswith("scripted observation") for i, o in enumerate(observations) if i != 2)
    assert len({id(e.unwrapped.world_model) for e in vec.envs}) == 1


@pytest.mark.skipif(not (shutil.which("tmux") and shutil.which("bwrap")), reason="needs tmux and bubblewrap")
def test_the_real_terminal_by_id(tmp_path):
    env = gym.make("lwm/Terminal-real-v0")
    try:
        env.reset(seed=0)
        observation = env.step('[{"keystrokes": "echo real-$((40 + 2))\\n", "duration": 0.3}]')[0]
    finally:
        env.close()
    assert "real-42" in observation
