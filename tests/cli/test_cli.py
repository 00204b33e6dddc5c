import json

from typer.testing import CliRunner

from lwm.backends.openai import OpenAIBackend
from lwm.backends.transformers import TransformersBackend
from lwm.cli import app
from lwm.testing.openai_server import ScriptedServer
from lwm.types import Trajectory
from tests.samples import trajectory

runner = CliRunner()
ECHO = '[{"keystrokes": "echo hello\\n", "duration": 0.1}]'


def test_simulate_with_mock_prints_the_observation():
    result = runner.invoke(app, ["simulate", "--domain", "terminal", "--action", ECHO, "--model", "mock"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("mock observation ")


def test_simulate_json_output(tmp_path):
    history = tmp_path / "h.json"
    trajectory("mcp", 2).save(history)
    result = runner.invoke(app, ["simulate", "--history", str(history), "--model", "mock", "--json",
                                 "--action", '{"name": "read_graph", "arguments": {}}'])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["domain"] == "mcp" and data["turn"] == 3
    assert data["action"] == {"name": "read_graph", "arguments": {}}
    assert data["metadata"]["model"] == "mock" and data["observation"].startswith("mock observation")


def test_simulate_against_the_openai_backend(server):
    result = runner.invoke(app, ["simulate", "--action", ECHO, "--model", "openai:scripted",
                                 "--base-url", server.base_url])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("scripted observation")


def test_simulate_reads_context_file(tmp_path):
    ctx = tmp_path / "ctx.json"
    ctx.write_text(json.dumps([{"name": "lookup", "description": "Look up"}]))
    result = runner.invoke(app, ["simulate", "--domain", "mcp", "--context", str(ctx), "--model", "mock", "--json",
                                 "--action", '{"name": "lookup", "arguments": {}}'])
    assert result.exit_code == 0, result.output


def test_bad_action_is_a_usage_error():
    result = runner.invoke(app, ["simulate", "--domain", "terminal", "--action", "ls", "--model", "mock"])
    assert result.exit_code == 2
    assert "terminal actions are JSON" in result.output


def test_unknown_domain_and_model_are_named():
    result = runner.invoke(app, ["simulate", "--domain", "tv", "--action", "{}", "--model", "mock"])
    assert result.exit_code == 2 and "unknown domain 'tv'" in result.output
    result = runner.invoke(app, ["simulate", "--action", ECHO, "--model", "nope:x"])
    assert result.exit_code == 1 and "unknown backend 'nope'" in result.output


def test_unreachable_server_is_a_clear_error():
    result = runner.invoke(app, ["simulate", "--action", ECHO, "--model", "openai:m?max_retries=0&timeout=2",
                                 "--base-url", "http://127.0.0.1:9/v1"])
    assert result.exit_code == 1 and "connection failed" in result.output


def test_a_hung_server_fails_interactive_commands_in_their_time_budget():
    import time

    from lwm.testing.openai_server import ScriptedServer

    with ScriptedServer() as hung:
        hung.inject("hang", times=10, seconds=30)
        started = time.monotonic()
        result = runner.invoke(app, ["simulate", "--action", ECHO, "--model", "openai:m", "--base-url", hung.base_url,
                                     "--timeout", "1", "--no-cache"])
        took = time.monotonic() - started
    # --retries defaults to 1 for simulate and shell: two attempts of --timeout each, then one clear line.
    assert result.exit_code == 1 and "no complete answer within 1s" in result.output and "2 attempts" in result.output
    assert took < 20


def test_models_lists_every_backend():
    result = runner.invoke(app, ["models"])
    assert result.exit_code == 0
    for name in ("embedded", "openai", "transformers", "mock"):
        assert name in result.output
    wide = runner.invoke(app, ["models"], env={"COLUMNS": "250"})
    assert TransformersBackend.info().detail in wide.output  # markup-like "[transformers]" survives


def test_shell_with_piped_input_saves_the_session(tmp_path):
    save = tmp_path / "session.json"
    result = runner.invoke(app, ["shell", "--domain", "terminal", "--model", "mock", "--save", str(save)],
                           input="ls\npwd\n")
    assert result.exit_code == 0, result.output
    saved = Trajectory.load(save)
    assert [t.action.content[0]["keystrokes"] for t in saved.turns] == ["ls\n", "pwd\n"]
    assert result.output.count("mock observation") == 2


def test_data_build_take_samples_per_domain_and_names_a_bad_count(tmp_path):
    source = tmp_path / "train.jsonl"
    source.write_text("".join(trajectory(d).model_dump_json() + "\n" for d in ("terminal", "os")))
    out = tmp_path / "sft.jsonl"
    result = runner.invoke(app, ["data", "build", str(source), "--stage", "sft", "--out", str(out),
                                 "--take", "os=1"])
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["domain"] for line in out.read_text().splitlines()] == ["os"]
    result = runner.invoke(app, ["data", "build", str(source), "--stage", "sft", "--out", str(out),
                                 "--take", "os1"])
    assert result.exit_code != 0 and "DOMAIN=N" in result.output


def test_version_and_short_help_everywhere():
    import lwm

    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.output.strip() == f"lwm {lwm.__version__}"
    for args in (["-h"], ["agent", "-h"], ["agent", "eval", "-h"]):
        shown = runner.invoke(app, args)
        assert shown.exit_code == 0 and "Usage: lwm" in shown.output, args


def test_data_commands_on_nothing_fail_in_one_line(tmp_path):
    missing = runner.invoke(app, ["data", "stats", str(tmp_path / "missing")])
    assert missing.exit_code == 2 and missing.stderr.strip() == f"lwm: error: {tmp_path / 'missing'}: no such file or folder"
    (tmp_path / "t.jsonl").write_text("not json\n")
    empty = runner.invoke(app, ["data", "split", str(tmp_path / "t.jsonl"), "--out", str(tmp_path / "split")])
    assert empty.exit_code == 1 and "lwm: error: no trajectories in" in empty.stderr and "1 unreadable" in empty.stderr
    assert "t.jsonl:1" in empty.stderr and not (tmp_path / "split").exists()  # the bad line is named, nothing written


def test_models_calls_an_openai_server_usable_only_when_it_answers():
    with ScriptedServer(model="wm-7b") as server:
        up = runner.invoke(app, ["models", "--base-url", server.base_url], env={"COLUMNS": "250"})
    assert up.exit_code == 0 and "serves wm-7b" in up.output and "openai:wm-7b" in up.output
    down = runner.invoke(app, ["models", "--base-url", server.base_url], env={"COLUMNS": "250"})  # stopped now
    assert "no OpenAI-compatible server answers" in down.output
    assert OpenAIBackend.info(server.base_url).usable is False


def test_piped_output_keeps_whole_tables_and_prints_progress_lines(tmp_path):
    """In CI or through a pipe there is no terminal: tables are not cut at 80 columns, and progress is lines."""
    import subprocess
    import sys
    from pathlib import Path

    lwm = str(Path(sys.executable).with_name("lwm"))
    env = {k: v for k, v in __import__("os").environ.items() if k != "COLUMNS"}
    done = subprocess.run([lwm, "bench", "run", "--data", "data/bench-sample", "--model", "copy-last", "--judge",
                           "rules", "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=300,
                          env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "factuality" in done.stdout and "consistency" in done.stdout and "…" not in done.stdout
    assert "infer: 184/184 in " in done.stdout and "judge: 184/184 in " in done.stdout
