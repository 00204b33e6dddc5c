"""Random actions against every real environment, for a bounded number of steps: an observation every time
(never an exception out of ``step``), every episode recorded exactly once, and nothing left behind.

The seed and the number of steps come from ``LWM_FUZZ_SEED`` / ``LWM_FUZZ_STEPS`` (a failure replays by its
seed); docs/serving.md quotes a longer run's counts.
"""

import json
import os
import random

import pytest

from lwm.data import read_trajectories
from lwm.envs.real import terminal
from lwm.envs.registration import open_env
from lwm.rollout.task_env import recorder
from lwm.testing import fuzz
from tests.envs.real.conftest import needs_sandbox, wait_for
from tests.leftovers import leftovers

SEED = int(os.environ.get("LWM_FUZZ_SEED", "0"))
STEPS = int(os.environ.get("LWM_FUZZ_STEPS", "30"))
EPISODES = 2

ACTIONS = {  # domain -> (options, the next action from the rng and the episode's tool definitions)
    "terminal": (None, lambda rng, tools: fuzz.keystrokes(rng)),
    "swe": ({"command_timeout": 3}, fuzz.tool_call),
    "mcp": ({"preset": "memory"}, fuzz.tool_call),
    "search": (None, fuzz.tool_call),
    "web": (None, lambda rng, tools: rng.choice([f"click('{fuzz.text(rng, 2)}')", f"fill('a1', {fuzz.text(rng)!r})",
                                          f"goto({fuzz.text(rng, 3)!r})", fuzz.text(rng), "scroll(0, 1e400)"])),
    "os": ({"action_timeout": 3}, lambda rng, tools: rng.choice([fuzz.text(rng), fuzz.text(rng), "import os\nos.getcwd()",
                                                          f"print({fuzz.text(rng)!r})", f"x = {fuzz.value(rng)!r}",
                                                          fuzz.text(rng), "import time; time.sleep(0.1)",
                                                          "while True: pass"])),
}


@needs_sandbox
@pytest.mark.parametrize("domain", list(ACTIONS))
def test_random_actions_get_an_observation_each_and_every_episode_is_recorded_once(domain, tmp_path, monkeypatch):
    monkeypatch.setattr(terminal, "MAX_WAIT", 0.5)  # a duration of 1e9 is held to this: the run stays short
    options, action = ACTIONS[domain]
    rng = random.Random(f"{SEED}-{domain}")
    before = leftovers()
    accepted = []
    for episode in range(EPISODES):
        env = open_env(domain, env_options=options, store=tmp_path / "store")
        try:
            env.reset(seed=episode)
            tools = env.unwrapped.trajectory.context.tools
            turns = 0
            for _ in range(STEPS):
                sent = action(rng, tools)
                obs, reward, terminated, truncated, info = env.step(sent if isinstance(sent, str) else json.dumps(sent))
                assert isinstance(obs, str), (sent, obs)
                turns += "invalid_action" not in info
                if terminated or truncated:
                    break
            recorder(env).finish()
            accepted.append(turns)
        finally:
            env.close()
    stored = list(read_trajectories(tmp_path / "store"))
    assert sorted(len(t.turns) for t in stored) == sorted(accepted)  # each episode once, every turn in it
    assert len({t.id for t in stored}) == EPISODES
    # no work folder, socket, image, mount or process behind (a process may take a moment to go)
    assert wait_for(lambda: not leftovers() - before, 10), leftovers() - before
