"""The shell's logic with scripted input, and the real thing driven through tmux like a person would."""

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from lwm.backends import MockBackend
from lwm.cli.shell import SimShell, split_screen
from lwm.types import Trajectory
from lwm.worldmodel import WorldModel
from tests.waiting import wait_for as polled

SCREENS = {
    "ls": "user@lwm:~$ ls\nnotes.txt  run.py\nuser@lwm:~$ ",
    "cd src": "user@lwm:~$ ls\nnotes.txt  run.py\nuser@lwm:~$ cd src\nbash: cd: src: No such file or directory\nuser@lwm:~$ ",
}


def scripted(messages):
    typed = messages[-1]["content"].split('"keystrokes": "')[1].split("\\n")[0]
    return f"<predicted_observation>{SCREENS[typed]}</predicted_observation>"


def test_split_screen_shows_only_new_output_and_finds_the_prompt():
    out, prompt = split_screen(SCREENS["ls"], SCREENS["cd src"], "cd src")
    assert out == "bash: cd: src: No such file or directory" and prompt == "user@lwm:~$ "
    out, prompt = split_screen("", "compiling...\n[=====>   ]", "make")
    assert out == "compiling...\n[=====>   ]" and prompt is None


def run_session(lines, tmp_path):
    console = Console(record=True, width=120)
    shell = SimShell(WorldModel(MockBackend(scripted), cache=False), Trajectory(domain="terminal"), console,
                     save=tmp_path / "s.json")
    feed = iter(lines)
    prompts = []

    def read(prompt):
        prompts.append(prompt)
        item = next(feed)
        if isinstance(item, BaseException):
            raise item
        return item

    return shell.run(read), console.export_text(), prompts


def test_session_carries_history_and_handles_ctrl_c_and_ctrl_d(tmp_path):
    traj, text, prompts = run_session(["ls", KeyboardInterrupt(), "cd src", "", EOFError()], tmp_path)
    assert len(traj.turns) == 2
    assert "notes.txt  run.py" in text and "^C" in text and "No such file or directory" in text
    assert prompts[0] == "user@sandbox:~$ " and prompts[-1] == "user@lwm:~$ "
    assert Trajectory.load(tmp_path / "s.json") == traj


def test_bad_mcp_line_is_reported_and_the_session_goes_on(tmp_path):
    console = Console(record=True)
    shell = SimShell(WorldModel(MockBackend(), cache=False), Trajectory(domain="mcp"), console)
    assert "not valid JSON" in shell.handle("read_file {oops")
    assert shell.handle('read_file {"path": "/a"}').startswith("mock observation")
    assert len(shell.trajectory.turns) == 1


def test_the_mcp_shell_refuses_what_the_server_would_and_reads_tools_files(tmp_path):
    import json

    from typer.testing import CliRunner

    from lwm.cli import app
    from lwm.types import Context

    tools = [{"name": "read_file", "description": "Read a file", "inputSchema": {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]
    shell = SimShell(WorldModel(MockBackend(), cache=False), Trajectory(domain="mcp", context=Context(tools=tools)),
                     Console(record=True))
    assert shell.handle('grep {"x": 1}') == "Unknown tool: grep (tools: read_file)"  # not asked of the model
    assert shell.handle('read_file {"path": 3}').startswith("Invalid arguments for tool read_file")
    assert shell.handle('read_file {"path": "/a"}').startswith("mock observation")
    assert len(shell.trajectory.turns) == 1
    (tmp_path / "tools.json").write_text(json.dumps({"tools": tools}))
    done = CliRunner().invoke(app, ["shell", "--domain", "mcp", "--model", "mock", "--no-cache", "--tools",
                                    str(tmp_path / "tools.json")], input='grep {"x": 1}\n')
    assert done.exit_code == 0 and "Unknown tool: grep" in done.output
    missing = CliRunner().invoke(app, ["shell", "--domain", "mcp", "--model", "mock", "--tools",
                                       str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "--tools" in missing.output and "no such file" in missing.output


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")
def test_real_terminal_session_in_tmux(tmp_path):
    lwm = Path(sys.executable).parent / "lwm"
    name = f"lwm-test-{time.monotonic_ns()}"
    save = tmp_path / "s.json"
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "30",
                    f"{lwm} shell --model mock --save {save}; sleep 30"], check=True)

    def screen():
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout

    def wait_for(text, timeout=20.0):
        assert polled(lambda: text in screen(), timeout), f"{text!r} never appeared:\n{screen()}"

    try:
        wait_for("user@sandbox:~$")
        subprocess.run(["tmux", "send-keys", "-t", name, "echo hi", "Enter"], check=True)
        wait_for("mock observation")
        subprocess.run(["tmux", "send-keys", "-t", name, "half typed", "C-c"], check=True)
        wait_for("^C")
        subprocess.run(["tmux", "send-keys", "-t", name, "C-d"], check=True)
        wait_for("trajectory saved")
        assert len(Trajectory.load(save).turns) == 1
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], check=False)


def test_ctrl_c_during_a_prediction_abandons_it_and_the_shell_goes_on(tmp_path):
    interrupted = []

    def answer(messages):
        if not interrupted:
            interrupted.append(True)
            raise KeyboardInterrupt  # what Ctrl+C does while the model is working
        return "<predicted_observation>user@lwm:~$ ls\nnotes.txt\nuser@lwm:~$ </predicted_observation>"

    console = Console(record=True)
    shell = SimShell(WorldModel(MockBackend(answer), cache=False), Trajectory(domain="terminal"), console)
    feed = iter(["ls", "ls", EOFError()])

    def read(prompt):
        item = next(feed)
        if isinstance(item, BaseException):
            raise item
        return item

    traj = shell.run(read)
    text = console.export_text()
    assert "prediction abandoned" in text and "notes.txt" in text
    assert len(traj.turns) == 1


def test_the_shell_says_on_stderr_what_happened_to_an_answer(capsys):
    """`lwm shell` printed no note at all: an edit that falls back is now said, as `lwm simulate` says it."""
    broken = ("<predicted_observation>@edit previous\n<<<<<<< SEARCH\nnowhere\n=======\nx\n>>>>>>> REPLACE"
              "</predicted_observation>")
    console = Console(record=True, width=120)
    shell = SimShell(WorldModel(MockBackend([broken]), cache=False), Trajectory(domain="terminal"), console)
    shell.handle("ls")
    err = capsys.readouterr().err
    assert err.startswith("lwm: its edit could not be applied (SEARCH text not in the base: 'nowhere'); fell back")
    assert "the observation is" in err and "nowhere" not in console.export_text()
