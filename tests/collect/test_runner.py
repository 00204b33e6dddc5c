"""The collect runner: a broken episode (even one whose environment cannot be built) ends with an error."""

import pytest

from lwm.collect.runner import EpisodeSpec, plan, run, run_episode


def test_an_env_that_cannot_be_built_ends_its_episode_not_the_collection(tmp_path):
    bad = EpisodeSpec("terminal", 0, 0, 2, str(tmp_path), env_options={"no_such_option": 1})
    result = run_episode(bad)
    assert result.turns == 0 and result.error.startswith("TypeError") and "no_such_option" in result.error
    unknown_policy = EpisodeSpec("search", 1, 0, 2, str(tmp_path), policy="agent:nosuchbackend:x")
    results = run([bad, unknown_policy])
    assert [r.id for r in results] == [bad.id, unknown_policy.id] and all(r.error for r in results)
    assert not (tmp_path / "trajectories.jsonl").exists() or (tmp_path / "trajectories.jsonl").read_text() == ""


def test_an_episode_of_no_steps_is_refused():
    with pytest.raises(ValueError, match="max_steps must be at least 1"):
        plan("terminal", 1, 0, 0, "/tmp/unused")
