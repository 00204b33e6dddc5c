"""The real SWE environment on the bundled small project with a failing test (projects/calc)."""

import json
from pathlib import Path

import pytest

from lwm.envs.real import SWEEnv
from lwm.envs.real.swe import DEFAULT_PROJECT
from lwm.types import Trajectory
from tests.envs.real.conftest import needs_sandbox

pytestmark = needs_sandbox
PROJECT = DEFAULT_PROJECT


def call(name: str, **arguments) -> str:
    return json.dumps({"name": name, "arguments": arguments})


@pytest.fixture
def env():
    e = SWEEnv(PROJECT)
    yield e
    e.close()


def test_tools_are_the_context_and_reset_lists_the_repository(env):
    obs, _ = env.reset()
    assert obs.splitlines() == ["README.md", "calc/", "pyproject.toml", "tests/"]
    assert [t["name"] for t in env.trajectory.context.tools] == [
        "bash", "read_file", "write_file", "str_replace", "list_dir", "search"]


def test_fix_a_bug_with_real_tools(env):
    env.reset()
    obs, *_ = env.step(call("bash", command="python -m pytest -q -p no:cacheprovider 2>&1 | tail -1"))
    assert "1 failed, 2 passed" in obs and obs.endswith("[exit code: 0]")
    obs, *_ = env.step(call("read_file", path="calc/ops.py", start_line=11, end_line=13))
    assert obs.splitlines()[0] == "    11\tdef mean(values):"
    obs, *_ = env.step(call("str_replace", path="calc/ops.py", old_str="return sum(values) / len(values)",
                            new_str="return sum(values) / len(values) if values else 0.0"))
    assert obs == "Replaced 1 occurrence in calc/ops.py at line 13"
    obs, *_ = env.step(call("bash", command="python -m pytest -q -p no:cacheprovider 2>&1 | tail -1; git status --short"))
    assert "3 passed" in obs and "M calc/ops.py" in obs
    obs, *_ = env.step(call("search", pattern="def (add|mean)"))
    assert obs.splitlines() == ["./calc/ops.py:1:def add(a, b):", "./calc/ops.py:11:def mean(values):"]
    assert len(env.trajectory.turns) == 5


@pytest.mark.parametrize(
    "name, arguments, expected",
    [
        ("read_file", {"path": "nope.py"}, "Error: file not found: nope.py"),
        ("read_file", {"path": "../../etc/passwd"}, "Error: ../../etc/passwd: outside the repository"),
        ("str_replace", {"path": "calc/ops.py", "old_str": "return", "new_str": "x"},
         "Error: old_str occurs 3 times in calc/ops.py; it must occur exactly once"),
        ("list_dir", {"path": "README.md"}, "Error: not a directory: README.md"),
        ("bash", {"command": "exit 3"}, "[exit code: 3]"),
        ("bash", {"command": "sleep 5", "timeout": 1}, "[command timed out after 1 s]"),
        ("grep", {"pattern": "x"}, "Error: unknown tool 'grep'. Available: bash, read_file, write_file, "
                                   "str_replace, list_dir, search"),
        ("read_file", {"file": "x"}, "Error: invalid arguments for read_file"),
    ],
)
def test_tool_errors_are_what_the_tool_says(env, name, arguments, expected):
    env.reset()
    obs, _, _, _, info = env.step(call(name, **arguments))
    assert obs.startswith(expected) or obs.endswith(expected)


def test_write_then_read_round_trips(env):
    env.reset()
    env.step(call("write_file", path="docs/notes.md", content="one\ntwo\n"))
    obs, *_ = env.step(call("read_file", path="docs/notes.md"))
    assert obs == "     1\tone\n     2\ttwo"


def test_bash_is_sandboxed(env):
    env.reset()
    obs, *_ = env.step(call("bash", command="touch /usr/lwm-probe; python3 -c \"import urllib.request as u; "
                                            "u.urlopen('http://127.0.0.1:9', timeout=2)\" 2>&1 | tail -1"))
    assert "Read-only file system" in obs and "URLError" in obs
    assert not Path("/usr/lwm-probe").exists()


def test_a_source_distribution_is_unpacked(tmp_path):
    import tarfile

    archive = tmp_path / "calc-0.1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(PROJECT, arcname="calc-0.1.0")
    env = SWEEnv(archive)
    try:
        obs, _ = env.reset()
        assert "calc/" in obs and env.root.name == "calc-0.1.0"
    finally:
        env.close()


def test_odd_input_is_an_error_observation_never_a_hang_or_an_exception(env):
    import os
    import time

    env.reset()
    os.mkfifo(env.root / "pipe")
    with open(env.root / "big.log", "wb") as handle:  # 1 GiB, sparse: nothing is written to disk
        handle.truncate(2**30)
    started = time.monotonic()
    obs, _, _, _, info = env.step(call("read_file", path="pipe"))
    assert obs == "Error: pipe is not a regular file" and info["tool_error"]
    obs, *_ = env.step(call("read_file", path="big.log", start_line=1, end_line=1))
    assert "larger than 4 MiB" in obs or len(obs) < 100
    assert time.monotonic() - started < 5
    for name, arguments in [("bash", {"command": "echo a\x00b"}), ("read_file", {"path": "calc\x00/ops.py"}),
                            ("search", {"pattern": "def\x00"})]:
        obs, _, _, _, info = env.step(json.dumps({"name": name, "arguments": arguments}, ensure_ascii=True))
        assert obs.startswith(f"Error: invalid arguments for {name}") and info["tool_error"], (name, obs)


def test_text_that_is_not_unicode_is_written_and_recorded_with_replacement_characters(env):
    """A lone surrogate (a JSON escape such as \\ud800, a name decoded with surrogateescape) once lost the whole
    episode: pydantic cannot serialise it. It stands as U+FFFD in what runs and in what is recorded."""
    env.reset()
    for arguments in ({"path": "n-\udcff.txt", "content": "a\ud800b"}, {"path": "emoji.txt", "content": "\ud83d\ude00"}):
        obs, _, _, _, info = env.step(json.dumps({"name": "write_file", "arguments": arguments}, ensure_ascii=True))
        assert obs.startswith("Wrote") and not info["tool_error"], obs
    assert (env.root / "n-\ufffd.txt").read_text() == "a\ufffdb"  # valid UTF-8 on disk
    assert (env.root / "emoji.txt").read_text() == "\U0001f600"  # a pair split in two is joined
    obs, _, _, _, info = env.step(call("read_file", path="n-\udcff.txt"))
    assert obs.endswith("a\ufffdb") and not info["tool_error"]
    stored = Trajectory.model_validate_json(env.trajectory.model_dump_json())  # serialises, and reads back
    assert stored.turns[0].action.content["arguments"]["path"] == "n-\ufffd.txt"


def test_a_path_too_long_for_the_system_is_refused_at_once(env):
    """A 400 KB path ("a/" * 200,000) once cost 37 s of CPU resolving it."""
    import time

    env.reset()
    started = time.process_time()
    obs, _, _, _, info = env.step(call("read_file", path="a/" * 200_000))
    assert "longer than the system allows" in obs and info["tool_error"]
    assert time.process_time() - started < 5


def test_fifos_huge_files_long_arguments_and_undecodable_names_are_error_observations(env):
    """Host-side file tools once hung on a FIFO, took 2 GB for a sparse file, and an undecodable name lost
    the episode (the recorder could not serialise a lone surrogate)."""
    import os
    import time

    env.reset()
    os.mkfifo(env.root / "f")
    with open(env.root / "sparse.bin", "wb") as handle:
        handle.truncate(2**30)
    (env.root / os.fsdecode(b"bad-\xff.txt")).write_text("x")
    started = time.monotonic()
    obs, _, _, _, info = env.step(call("write_file", path="f", content="hello"))
    assert obs == "Error: f is not a regular file" and info["tool_error"]
    obs, *_ = env.step(call("search", pattern="hello"))
    assert obs.startswith("No matches")
    obs, *_ = env.step(call("str_replace", path="sparse.bin", old_str="a", new_str="b"))
    assert "larger than 4 MiB" in obs
    assert time.monotonic() - started < 20  # was: a hang, then 60 s, then 12 s
    for name, arguments in [("bash", {"command": "echo " + "y" * 200_000}), ("search", {"pattern": "z" * 200_000})]:
        obs, _, _, _, info = env.step(call(name, **arguments))
        assert "longer than 100,000 bytes" in obs and info["tool_error"], (name, obs[:200])
    obs, *_ = env.step(call("list_dir"))
    assert "bad-\\xff.txt" in obs.splitlines()
    env.trajectory.model_dump_json()  # the episode can be recorded


def test_sdists_unpack_on_a_python_without_tarfiles_data_filter(tmp_path, monkeypatch):
    """Debian 12's stock Python (3.11.2) has no ``filter=`` (it came in 3.11.4): the same checks run by hand,
    and an archive reaching outside the project is refused whole."""
    import io
    import tarfile

    from lwm.envs.real import swe

    def archive(name: str, members: list[tuple[str, bytes | None, str | None]]) -> Path:
        path = tmp_path / name
        with tarfile.open(path, "w:gz") as tar:
            for member, data, link in members:
                info = tarfile.TarInfo(member)
                if link is not None:
                    info.type, info.linkname = tarfile.SYMTYPE, link
                    tar.addfile(info)
                else:
                    info.size, info.mode = len(data or b""), 0o4777
                    tar.addfile(info, io.BytesIO(data or b""))
        return path

    monkeypatch.delattr(tarfile, "data_filter", raising=False)
    good = archive("good.tar.gz", [("proj-1/setup.py", b"print(1)", None), ("proj-1/link", None, "setup.py"),
                                   ("proj-1/pkg/up", None, "../setup.py")])
    root = swe.unpack_project(good, tmp_path / "out")
    assert root.name == "proj-1" and (root / "setup.py").read_text() == "print(1)"
    assert (root / "setup.py").stat().st_mode & 0o7777 == 0o755  # no setuid, nothing world-writable
    for bad in ([("../evil", b"x", None)], [("/abs", b"x", None)], [("proj/l", None, "../../etc/passwd")],
                [("proj/l", None, "/etc/passwd")]):
        with pytest.raises(tarfile.TarError, match="refusing"):
            swe.unpack_project(archive("bad.tar.gz", bad), tmp_path / "bad")
    assert not (tmp_path / "evil").exists()
