from lwm.data import TrajectoryStore, read_trajectories, write_trajectories
from tests.samples import trajectory


def test_finished_trajectories_are_appended_and_found_by_id(tmp_path):
    store = TrajectoryStore(tmp_path)
    first, second = trajectory("terminal", 0), trajectory("mcp", 0)
    store.append(first)
    store.append(second)
    store.close()
    assert store.finished_ids() == {first.id, second.id}
    assert [t.domain for t in store] == ["terminal", "mcp"]


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
