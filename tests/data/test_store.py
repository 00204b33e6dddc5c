import json

from lwm.data import TrajectoryStore, read_trajectories, write_trajectories
from lwm.types import Action, Observation
from tests.samples import trajectory


def test_episode_is_written_step_by_step_then_finished(tmp_path):
    store = TrajectoryStore(tmp_path)
    recorder = store.recorder(trajectory("terminal", 0))
    for action, obs in [([{"keystrokes": "ls\n", "duration": 0.1}], "a"), ([{"keystrokes": "pwd\n", "duration": 0.1}], "b")]:
        recorder.step(Action(content=action), Observation(content=obs))
        lines = recorder.path.read_text().splitlines()  # flushed at once: a kill now loses nothing written
        assert json.loads(lines[-1])["turn"]["observation"]["content"] == obs
    assert store.finished_ids() == set()
    finished = recorder.finish()
    assert store.finished_ids() == {finished.id} and not recorder.path.exists()
    assert [t.observation.content for t in next(iter(store)).turns] == ["a", "b"]


def test_unreadable_lines_are_reported_with_file_and_line_and_skipped(tmp_path):
    path = tmp_path / "t.jsonl"
    write_trajectories(path, [trajectory("mcp", 1), trajectory("swe", 1)])
    with path.open("a") as handle:
        handle.write('{"domain": "terminal", "turns": [{"half a line')  # what a kill mid-write leaves
    problems: list[str] = []
    loaded = list(read_trajectories(path, problems))
    assert [t.domain for t in loaded] == ["mcp", "swe"]
    assert len(problems) == 1 and problems[0].startswith(f"{path}:3: skipped")


def test_missing_file_reads_as_empty(tmp_path):
    assert list(read_trajectories(tmp_path / "none.jsonl")) == []
