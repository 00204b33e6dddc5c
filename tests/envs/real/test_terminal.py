"""The real terminal: bash in tmux in bubblewrap, driven like an agent would."""

import json
import shutil
import socket
import tempfile
from pathlib import Path

import pytest
from gymnasium.utils.env_checker import check_env

from lwm.envs.real import TerminalEnv
from lwm.envs.real.terminal import is_key
from tests.envs.real.conftest import needs_sandbox, needs_tmux

pytestmark = [needs_sandbox, needs_tmux]


def keys(*steps: tuple[str, float]) -> str:
    return json.dumps([{"keystrokes": k, "duration": d} for k, d in steps])


@pytest.fixture
def env():
    e = TerminalEnv(width=80, height=20)
    yield e
    e.close()


def test_commands_run_and_the_screen_is_observed(env):
    obs, _ = env.reset()
    assert obs == "user@sandbox:~$"
    obs, *_ = env.step(keys(("printf 'a\\nb\\n' > notes.txt && wc -l notes.txt\n", 0.8)))
    assert "2 notes.txt" in obs and obs.endswith("user@sandbox:~$")
    obs, *_ = env.step(keys(("cat missing.txt\n", 0.6)))
    assert "cat: missing.txt: No such file or directory" in obs
    assert (env.workdir / "notes.txt").read_text() == "a\nb\n"
    assert len(obs.splitlines()) <= 20 and all(len(line) <= 80 for line in obs.splitlines())
    assert [t.action.content[0]["keystrokes"] for t in env.trajectory.turns][1] == "cat missing.txt\n"
    assert env.trajectory.provenance.source == "real"


def test_a_line_ending_in_a_semicolon_is_typed_whole(env):
    """tmux takes a trailing ";" for a command separator; SQL and shell lines end in one."""
    env.reset()
    obs, *_ = env.step(keys(("python3 -q\n", 0.8), ("x = 7;\n", 0.4), ("print(x * 6);\n", 0.5)))
    assert "x = 7;" in obs and "print(x * 6);" in obs and "\n42\n" in obs


def test_a_chunk_starting_with_a_dash_is_typed_not_read_as_tmux_options(env):
    env.reset()
    obs, *_ = env.step(keys(("echo A", 0.1), ("-Z\n", 0.4), ("-n\n", 0.2), ("echo --version-of-nothing\n", 0.4)))
    assert "echo A-Z" in obs and "\nA-Z\n" in obs and "-n: command not found" in obs
    assert "\n--version-of-nothing\n" in obs


def test_ctrl_c_interrupts_a_running_command(env):
    env.reset()
    obs, *_ = env.step(keys(("sleep 30\n", 0.3)))
    assert obs.rstrip().endswith("sleep 30")  # still running: no new prompt
    obs, *_ = env.step(keys(("C-c", 0.6)))
    assert "^C" in obs and obs.endswith("user@sandbox:~$")


def test_keys_and_text_are_told_apart():
    assert is_key("C-c") and is_key("Tab") and is_key("Up") and is_key("M-b")
    assert not is_key("ls") and not is_key("Cat") and not is_key("C-c is not a key\n")


@pytest.fixture
def outside_dir():
    """A real folder outside the sandbox's work folder, visible inside (lwm's checkout is; /tmp and homes are
    replaced by empty ones)."""
    folder = Path(tempfile.mkdtemp(dir=Path(__file__).parent, prefix=".lwm-probe-"))
    folder.chmod(0o777)  # so that what stops a write is the read-only mount, not the folder's mode
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_sandbox_has_no_network_and_only_its_folder_is_writable(env, outside_dir):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    outside = outside_dir / "outside.txt"
    env.reset()
    obs, *_ = env.step(keys((f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\" "
                             f"2>&1 | tail -1; touch {outside}; touch inside.txt && echo made\n", 1.5)))
    listener.close()
    obs = obs.replace("\n", "")  # the 80-column screen wraps long lines
    assert "ConnectionRefusedError" in obs or "Network is unreachable" in obs
    assert "Read-only file system" in obs and not outside.exists()
    assert "made" in obs and (env.workdir / "inside.txt").exists()


def test_passes_gymnasiums_env_checker(env):
    check_env(env, skip_render_check=True)


def test_workdir_is_removed_on_close():
    e = TerminalEnv()
    e.reset()
    folder = e.workdir
    assert folder.exists()
    e.close()
    assert not folder.exists()


def test_close_leaves_no_socket_folder_or_process():
    before = {p.name for p in Path("/tmp").iterdir() if p.name.startswith(("lwm-tmux-", "lwm-term-"))}
    env = TerminalEnv()
    env.reset()
    server = env._server
    assert {p.name for p in Path("/tmp").iterdir() if p.name.startswith(("lwm-tmux-", "lwm-term-"))} - before
    env.close()
    assert not server.is_alive()
    assert {p.name for p in Path("/tmp").iterdir() if p.name.startswith(("lwm-tmux-", "lwm-term-"))} == before


def test_episodes_leave_no_work_folder_behind():
    """A shell writes its history when tmux hangs up on it, racing the folder's removal (issue 29.12)."""
    before = set(Path(tempfile.gettempdir()).glob("lwm-term-*"))
    for _ in range(6):
        e = TerminalEnv()
        e.reset()
        e.step(keys(("echo one > a.txt\n", 0.1), ("cat a.txt\n", 0.1), ("history | tail -1\n", 0.2)))
        e.close()
    assert set(Path(tempfile.gettempdir()).glob("lwm-term-*")) <= before
