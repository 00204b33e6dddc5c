"""The collect runner: a broken episode (even one whose environment cannot be built) ends with an error."""

import subprocess
import sys
from pathlib import Path

import pytest

from lwm.collect.runner import EpisodeSpec, collect_episode, plan, run
from tests.waiting import wait_for


def test_an_env_that_cannot_be_built_ends_its_episode_not_the_collection(tmp_path):
    bad = EpisodeSpec("terminal", 0, 0, 2, str(tmp_path), env_options={"no_such_option": 1})
    result = collect_episode(bad)
    assert result.turns == 0 and result.error.startswith("TypeError") and "no_such_option" in result.error
    unknown_policy = EpisodeSpec("search", 1, 0, 2, str(tmp_path), policy="agent:nosuchbackend:x")
    results = run([bad, unknown_policy])
    assert [r.id for r in results] == [bad.id, unknown_policy.id] and all(r.error for r in results)
    assert not (tmp_path / "trajectories.jsonl").exists() or (tmp_path / "trajectories.jsonl").read_text() == ""


def test_an_episode_of_no_steps_is_refused():
    with pytest.raises(ValueError, match="--max-steps must be at least 1"):
        plan("terminal", 1, 0, 0, "/tmp/unused")


def test_pool_workers_die_with_a_killed_parent(tmp_path):
    """A collection killed by SIGKILL must not leave workers running episodes and appending to the store."""
    parent = tmp_path / "parent.py"
    parent.write_text(
        "import os\n"
        "import time\n"
        "from concurrent.futures import ProcessPoolExecutor\n"
        "from lwm.collect.runner import die_with_parent\n"
        "with ProcessPoolExecutor(2, initializer=die_with_parent) as pool:\n"
        "    pids = {pool.submit(os.getpid).result() for _ in range(8)}\n"
        "    busy = [pool.submit(time.sleep, 60) for _ in range(2)]\n"
        "    print(' '.join(map(str, pids)), flush=True)\n"
        "    time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, str(parent)], stdout=subprocess.PIPE, text=True)
    workers = proc.stdout.readline().split()
    assert workers and all(Path(f"/proc/{pid}").exists() for pid in workers)
    proc.kill()  # SIGKILL of the parent only, as a crash or the OOM killer would
    proc.wait()
    assert wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in workers), 5), workers


def test_another_seed_into_the_same_folder_is_refused(tmp_path):
    """Episode ids carry the seed, so a new seed finds nothing done; the folder still holds the first seed's
    episodes, and mixing the two collections is refused as any other changed setting is."""
    import json

    import pytest

    from lwm.collect.runner import plan
    from lwm.runfolder import SettingsChanged

    todo, _ = plan("terminal", 2, 3, 0, tmp_path)
    (tmp_path / "trajectories.jsonl").write_text(json.dumps({"id": todo[0].id, "domain": "terminal"}) + "\n")
    with pytest.raises(SettingsChanged, match="seed: 0 -> 5"):
        plan("terminal", 2, 3, 5, tmp_path)
    assert plan("terminal", 2, 3, 0, tmp_path)[1] == 1  # the same seed resumes
    assert plan("terminal", 2, 3, 5, tmp_path, tag="other")[1] == 0  # another part of a preset is its own stage


def test_an_environment_that_cannot_start_is_one_clear_error_before_any_episode():
    from lwm.collect.runner import EnvironmentStartError, preflight

    with pytest.raises(EnvironmentStartError, match=r"cannot start the mcp environment \(preset=nope\)"):
        preflight("mcp", {"preset": "nope"})
