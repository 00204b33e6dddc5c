"""RecordTrajectory: one recording wrapper over any env (here the simulator; the collect tests use real ones)."""

import json

import pytest
from gymnasium.wrappers import TimeLimit

from lwm.backends import MockBackend
from lwm.data import TrajectoryStore
from lwm.envs import RecordTrajectory, SimEnv
from lwm.types import Trajectory
from lwm.worldmodel import WorldModel

LS = json.dumps([{"keystrokes": "ls\n", "duration": 0.1}])


def sim() -> SimEnv:
    return SimEnv(WorldModel(MockBackend(), cache=False), "terminal")


def test_an_episode_lands_in_the_store_when_it_ends(tmp_path):
    store = TrajectoryStore(tmp_path)
    env = RecordTrajectory(TimeLimit(sim(), 3), store, trajectory_id="ep-1", provenance={"explorer": "test"})
    obs, _ = env.reset(seed=5)
    env.step(LS)
    env.step("not json")  # refused by the domain: answered, not recorded
    assert store.finished_ids() == set()
    *_, truncated, _ = env.step(LS)
    assert truncated and store.finished_ids() == {"ep-1"}
    stored = next(iter(store))
    assert len(stored.turns) == 2 and stored.provenance.source == "simulated"
    assert stored.provenance.extra == {"explorer": "test", "seed": 5, "initial_observation": obs}
    env.finish()  # finishing again stores nothing twice
    assert len(list(store)) == 1


def test_save_rewrites_the_file_after_every_step_and_an_unfinished_episode_is_not_stored(tmp_path):
    store = TrajectoryStore(tmp_path / "store")
    env = RecordTrajectory(sim(), store, save=tmp_path / "session.json")
    env.reset()
    for k in range(1, 3):
        env.step(LS)
        assert len(Trajectory.load(tmp_path / "session.json").turns) == k
    env.close()
    assert store.finished_ids() == set()


def test_step_before_reset_is_refused():
    with pytest.raises(Exception, match="reset"):
        RecordTrajectory(sim()).step(LS)
