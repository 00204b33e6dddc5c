"""`lwm collect` on the real terminal and swe environments: recording, resuming, surviving SIGKILL."""

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lwm.cli import app
from lwm.data import read_trajectories
from tests.envs.real.conftest import needs_sandbox, needs_tmux
from tests.waiting import wait_for

runner = CliRunner()
LWM = str(Path(sys.executable).parent / "lwm")


@needs_sandbox
@needs_tmux
def test_collect_records_with_provenance_and_resumes(tmp_path):
    args = ["collect", "--domain", "terminal", "--episodes", "3", "--max-steps", "3", "--workers", "2",
            "--out", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    trajectories = list(read_trajectories(tmp_path))
    assert sorted(t.id for t in trajectories) == ["terminal-s0-00000", "terminal-s0-00001", "terminal-s0-00002"]
    for t in trajectories:
        assert len(t.turns) == 3 and t.provenance.source == "real"
        assert t.provenance.extra["policy"] == "terminal-heuristic-v1" and t.provenance.extra["seed"] == 0
        assert all(turn.observation.metadata["seconds"] > 0 for turn in t.turns)
        assert all("user@sandbox:~$" in turn.observation.content for turn in t.turns)
    before = (tmp_path / "trajectories.jsonl").read_text()
    again = runner.invoke(app, args)
    assert "resuming: 3 finished episodes" in again.output
    assert (tmp_path / "trajectories.jsonl").read_text() == before
    shorter = runner.invoke(app, [*args[:-4], "--max-steps", "2", "--out", str(tmp_path)])  # would mix 3- and 2-step
    assert shorter.exit_code == 2 and "max_steps: 3 -> 2" in shorter.output and "lwm: error:" in shorter.output
    assert (tmp_path / "trajectories.jsonl").read_text() == before


@needs_sandbox
def test_collect_swe_episodes(tmp_path):
    result = runner.invoke(app, ["collect", "--domain", "swe", "--episodes", "2", "--max-steps", "5",
                                 "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    trajectories = list(read_trajectories(tmp_path))
    assert len(trajectories) == 2 and all(len(t.turns) == 5 for t in trajectories)
    assert trajectories[0].context.tools[0]["name"] == "bash"


def test_unknown_domain_is_refused(tmp_path):
    result = runner.invoke(app, ["collect", "--domain", "tv", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "no real environment" in result.output


@pytest.mark.parametrize(("args", "said"), [
    (["--domain", "mcp"], "needs a server: a preset (--env-option preset=NAME; presets: memory, filesystem"),
    (["--domain", "mcp", "--env-option", "preset=nonexistent"], "unknown MCP server preset 'nonexistent'"),
    (["--domain", "terminal", "--env-option", "bogus=1"], "unexpected keyword argument 'bogus'"),
    (["--domain", "swe", "--project", "missing.tar.gz"], "SWE project not found"),
    ([], "say which real environment to record"),
    (["--domain", "terminal", "--max-steps", "0"], "--max-steps must be at least 1"),
])
def test_ordinary_mistakes_are_one_line_and_record_nothing(tmp_path, args, said):
    result = runner.invoke(app, ["collect", *args, "--out", str(tmp_path / "c")])
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("lwm: error: ") and said in lines[0]
    assert not (tmp_path / "c").exists() or not list(read_trajectories(tmp_path / "c"))


@needs_sandbox
@needs_tmux
@pytest.mark.slow
def test_a_killed_collection_resumes_without_losing_or_redoing_finished_episodes(tmp_path):
    def episode_files() -> set[str]:  # work folders and their disk images
        return {p.name for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith(("lwm-term-", ".lwm-term-"))}

    before = episode_files()
    cmd = [LWM, "collect", "--domain", "terminal", "--episodes", "5", "--max-steps", "3", "--out", str(tmp_path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    store = tmp_path / "trajectories.jsonl"
    wait_for(lambda: store.exists() and len(store.read_text().splitlines()) >= 2, 60)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = store.read_text()
    kept = len(finished.splitlines())
    assert 2 <= kept < 5
    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert f"resuming: {kept} finished episodes" in rerun.stdout
    after = store.read_text()
    assert after.startswith(finished)  # finished episodes are untouched, not recomputed
    assert sorted(t.id for t in read_trajectories(store)) == [f"terminal-s0-0000{i}" for i in range(5)]
    # killed as an episode closed, its cleanup is finished by the episode's watchdog (3 of 4 runs once leaked)
    assert wait_for(lambda: not episode_files() - before, 15), episode_files() - before
    def watchdogs() -> str:  # the killed run's tmux servers go away with their watchdogs
        return subprocess.run(["pgrep", "-f", f"while kill -0 {proc.pid} "], capture_output=True, text=True).stdout

    assert wait_for(lambda: not watchdogs().strip(), 15), watchdogs()


@needs_sandbox
def test_collect_mcp_episodes_with_a_preset_server(tmp_path):
    from lwm.envs.real.mcp import NPM_BIN

    if not (NPM_BIN / "mcp-server-memory").exists():


        pytest.skip("npm MCP servers not installed (make setup)")
    result = runner.invoke(app, ["collect", "--domain", "mcp", "--episodes", "2", "--max-steps", "4",
                                 "--env-option", "preset=memory", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    trajectories = list(read_trajectories(tmp_path))
    assert len(trajectories) == 2 and all(len(t.turns) == 4 for t in trajectories)
    assert {"create_entities", "read_graph"} <= {tool["name"] for tool in trajectories[0].context.tools}
    assert trajectories[0].provenance.extra["policy"] == "mcp-schema-v1"


def test_collect_search_episodes(tmp_path, monkeypatch):
    from pathlib import Path

    if not Path("/usr/share/dictd/jargon.index").exists():


        pytest.skip("dict-jargon not installed (make setup)")
    result = runner.invoke(app, ["collect", "--domain", "search", "--episodes", "2", "--max-steps", "6",
                                 "--env-option", 'sources=["jargon"]', "--env-option", f"cache_dir={tmp_path / 'idx'}",
                                 "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    trajectories = list(read_trajectories(tmp_path / "out"))
    assert len(trajectories) == 2 and all(len(t.turns) == 6 for t in trajectories)
    names = {turn.action.content["name"] for t in trajectories for turn in t.turns}
    assert names <= {"web_search", "web_extractor", "dict_memory"} and "web_search" in names


def test_collect_web_episodes(tmp_path):
    from lwm.envs.real.web import CHROMIUM

    if not Path(CHROMIUM).exists():


        pytest.skip("chromium not installed (make setup)")
    result = runner.invoke(app, ["collect", "--domain", "web", "--episodes", "1", "--max-steps", "5",
                                 "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (trajectory,) = read_trajectories(tmp_path)
    assert len(trajectory.turns) == 5 and trajectory.provenance.extra["policy"] == "web-heuristic-v1"
    assert all("# Tabs" in turn.observation.content for turn in trajectory.turns)


@needs_sandbox
@pytest.mark.slow
def test_collect_as_ray_tasks(tmp_path):
    import pytest

    ray = pytest.importorskip("ray")
    try:
        result = runner.invoke(app, ["collect", "--domain", "swe", "--episodes", "2", "--max-steps", "3",
                                     "--workers", "2", "--executor", "ray", "--out", str(tmp_path)])
    finally:
        ray.shutdown()
    assert result.exit_code == 0, result.output
    assert sorted(t.id for t in read_trajectories(tmp_path)) == ["swe-s0-00000", "swe-s0-00001"]
