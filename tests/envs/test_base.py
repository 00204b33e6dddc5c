"""The TextEnv contract (lwm.envs.base): reset and step as Gymnasium has them, an invalid action answered in the
observation (never an exception), and every turn kept in the env's trajectory."""

from lwm.backends import MockBackend
from lwm.envs import SimEnv
from lwm.types import Context
from lwm.worldmodel import WorldModel


def _env() -> SimEnv:
    return SimEnv(WorldModel(MockBackend(["<predicted_observation>a.txt</predicted_observation>"]), cache=False),
                  "terminal", Context(initial_state="$ "))


def test_reset_and_step_keep_the_trajectory_and_give_no_reward_of_their_own():
    env = _env()
    observation, info = env.reset(seed=0)
    assert observation == "$ " and info == {"domain": "terminal", "turn": 0}
    observation, reward, terminated, truncated, info = env.step('[{"keystrokes": "ls\\n", "duration": 0.1}]')
    assert (observation, reward, terminated, truncated, info["turn"]) == ("a.txt", 0.0, False, False, 1)
    assert [t.observation.content for t in env.trajectory.turns] == ["a.txt"]
    assert "seconds" in env.trajectory.turns[0].observation.metadata and "seconds" not in info  # repeatable infos


def test_an_invalid_action_is_an_observation_and_leaves_the_trajectory_alone():
    env = _env()
    env.reset(seed=0)
    observation, reward, terminated, _, info = env.step("not json")
    assert observation.startswith("Error: invalid action:") and "invalid_action" in info
    assert (reward, terminated, env.trajectory.turns) == (0.0, False, [])


def test_a_new_context_can_come_with_reset_and_render_shows_the_last_observation():
    env = SimEnv(WorldModel(MockBackend(), cache=False), "terminal", render_mode="ansi")
    observation, _ = env.reset(options={"context": {"initial_state": "user@box:~$ "}})
    assert observation == env.render() == "user@box:~$ " and env.trajectory.context.initial_state == "user@box:~$ "
