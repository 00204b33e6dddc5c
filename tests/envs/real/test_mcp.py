"""The real MCP environment against real servers from npm and PyPI, over stdio and streamable HTTP."""

import json
import os
import socket
import subprocess

import pytest
from gymnasium.utils.env_checker import check_env

from lwm.envs.real.mcp import NPM_BIN, PYPI_BIN, MCPEnv
from tests.envs.real.conftest import needs_sandbox
from tests.waiting import wait_for

pytest.importorskip("mcp")
needs_npm_servers = pytest.mark.skipif(not (NPM_BIN / "mcp-server-memory").exists(),
                                       reason="npm MCP servers not installed (make setup)")
pytestmark = needs_sandbox


def call(name: str, **arguments) -> str:
    return json.dumps({"name": name, "arguments": arguments})


@pytest.fixture
def make():
    envs = []

    def factory(**kwargs) -> MCPEnv:
        env = MCPEnv(**kwargs)
        envs.append(env)
        return env

    yield factory
    for env in envs:
        env.close()


@needs_npm_servers
def test_memory_server_state_carries_across_calls(make):
    env = make(preset="memory")
    env.reset()
    names = [t["name"] for t in env.trajectory.context.tools]
    assert "create_entities" in names and "inputSchema" in env.trajectory.context.tools[0]
    obs, _, _, _, info = env.step(call("create_entities", entities=[{"name": "Ada", "entityType": "person",
                                                                      "observations": ["wrote notes"]}]))
    assert json.loads(obs)[0]["name"] == "Ada" and info["tool_error"] is False
    obs, *_ = env.step(call("read_graph"))
    assert json.loads(obs)["entities"][0]["observations"] == ["wrote notes"]
    obs, _, _, _, info = env.step(call("add_observations", observations=[{"entityName": "Bob", "contents": ["x"]}]))
    assert obs == "Error: Entity with name Bob not found" and info["tool_error"] is True
    obs, *_ = env.step(call("no_such_tool"))
    assert obs.startswith("Error: MCP error -32602") and "no_such_tool" in obs
    assert env.trajectory.provenance.environment.startswith("mcp:")


@needs_npm_servers
def test_each_episode_starts_from_a_fresh_server(make):
    env = make(preset="memory")
    env.reset()
    env.step(call("create_entities", entities=[{"name": "Ada", "entityType": "person", "observations": []}]))
    env.reset()
    obs, *_ = env.step(call("read_graph"))
    assert json.loads(obs)["entities"] == []


@needs_npm_servers
def test_filesystem_server_is_confined_to_its_sandboxed_folder(make):
    env = make(preset="filesystem")
    env.reset()
    obs, *_ = env.step(call("write_file", path="/home/user/work/notes.txt", content="hello"))
    assert obs == "Successfully wrote to /home/user/work/notes.txt"
    assert (env.workdir / "notes.txt").read_text() == "hello"
    obs, *_ = env.step(call("read_text_file", path="/etc/hostname"))
    assert obs.startswith("Error: Access denied - path outside allowed directories")


@needs_npm_servers
def test_everything_server_needs_its_stdio_argument(make):
    env = make(preset="everything")
    env.reset()
    obs, *_ = env.step(call("echo", message="hi"))
    assert obs == "Echo: hi"
    obs, *_ = env.step(call("get-sum", a=2, b=3))
    assert "5" in obs


def test_python_servers_time_and_git(make):
    env = make(preset="time")
    env.reset()
    obs, *_ = env.step(call("convert_time", source_timezone="UTC", time="12:00", target_timezone="Asia/Tokyo"))
    assert json.loads(obs)["target"]["datetime"].startswith("2") and "+09:00" in obs
    obs, _, _, _, info = env.step(call("get_current_time", timezone="Mars/Base"))
    assert info["tool_error"] is True and "Invalid timezone" in obs

    git = make(preset="git", setup=["git init -q -b main", "echo hi > a.txt",
                                   "git add a.txt && git -c user.email=a@b -c user.name=a commit -qm first"])
    git.reset()
    obs, *_ = git.step(call("git_log", repo_path="/home/user/work"))
    assert "first" in obs


@pytest.mark.skipif(not (PYPI_BIN / "mcp-server-sqlite").exists(), reason="PyPI MCP servers not installed (setup)")
def test_sqlite_server_from_its_own_environment_keeps_its_database(make):
    env = make(preset="sqlite")
    env.reset()
    assert {t["name"] for t in env.context.tools} >= {"create_table", "write_query", "read_query", "list_tables"}
    env.step(call("create_table", query="CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL)"))
    env.step(call("write_query", query="INSERT INTO items (name, price) VALUES ('pear', 2.5), ('fig', 4)"))
    obs, *_ = env.step(call("read_query", query="SELECT name FROM items WHERE price > 3"))
    assert "fig" in obs and "pear" not in obs
    obs, _, _, _, info = env.step(call("read_query", query="DELETE FROM items"))
    assert info["tool_error"] is True or "Only SELECT" in obs


@pytest.mark.skipif(not (PYPI_BIN / "mcp-shell-server").exists(), reason="PyPI MCP servers not installed (setup)")
def test_calculator_duckdb_and_shell_servers_answer_and_keep_their_state(make):
    calculator = make(preset="calculator")
    calculator.reset()
    assert calculator.step(call("calculate", expression="(46 + 5) / 3"))[0].strip() == "17.0"
    duckdb = make(preset="duckdb")
    duckdb.reset()
    duckdb.step(call("query", query="CREATE TABLE items (id INTEGER, name VARCHAR, price DOUBLE)"))
    duckdb.step(call("query", query="INSERT INTO items VALUES (1, 'pear', 2.5), (2, 'fig', 4)"))
    obs, *_ = duckdb.step(call("query", query="SELECT name FROM items WHERE price > 3"))
    assert "fig" in obs and "pear" not in obs
    shell = make(preset="shell")
    shell.reset()
    shell.step(call("shell_execute", command=["touch", "plan.txt"]))
    obs, *_ = shell.step(call("shell_execute", command=["ls"]))
    assert obs.split() == ["plan.txt"]
    obs, *_ = shell.step(call("shell_execute", command=["rm", "plan.txt"]))  # not on the allow list
    assert "not allowed" in obs.lower() and "plan.txt" in shell.step(call("shell_execute", command=["ls"]))[0]


@needs_npm_servers
def test_code_runner_runs_code_in_the_sandbox_despite_its_stdout_chatter(make):
    """It prints "Executing command: ..." on stdout beside JSON-RPC; the client skips the line, the call
    still answers. Its node needs more address space than the default cap (its preset lifts that one)."""
    env = make(preset="code-runner")
    env.reset()
    obs, *_ = env.step(call("run-code", languageId="python", code="print(sum(range(10)))"))
    assert obs.strip() == "45"
    obs, *_ = env.step(call("run-code", languageId="shellscript", code="hostname; echo $HOME"))
    assert obs.split() == ["sandbox", "/home/user/work"]  # the sandbox's host name and folder


@needs_npm_servers
def test_streamable_http_server(make):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # its HTTP transport names sessions with the global `crypto` (Node 19+); Debian 12's Node 18 has it behind a flag
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.lstrip("v").split(".")[0]
    webcrypto = {"NODE_OPTIONS": "--experimental-global-webcrypto"} if node.isdigit() and int(node) < 19 else {}
    proc = subprocess.Popen([str(NPM_BIN / "mcp-server-everything"), "streamableHttp"],
                            env={**os.environ, "PORT": str(port), **webcrypto}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        def listening() -> bool:
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0

        wait_for(listening, 15)
        env = make(url=f"http://127.0.0.1:{port}/mcp")
        env.reset()
        obs, *_ = env.step(call("echo", message="over http"))
        assert obs == "Echo: over http"
    finally:
        proc.terminate()
        proc.wait(5)


def test_a_server_that_cannot_start_is_a_clear_error(make):
    env = make(command="/bin/false")
    with pytest.raises(RuntimeError, match="failed to start"):
        env.reset()


@needs_npm_servers
def test_passes_gymnasiums_env_checker(make):
    check_env(make(preset="everything"), skip_render_check=True)


def test_presets_are_named_in_errors():
    with pytest.raises(ValueError, match="unknown MCP server preset 'nope'; known: memory"):
        MCPEnv(preset="nope")
