"""The verifiers face: verifiers' own `vf-eval` plays lwm tasks against `lwm serve openenv`, sim and real.

verifiers runs in its own virtual environment (`make verifiers`: verifiers 0.4 pins an older `mcp` than lwm's),
with `integrations/verifiers` installed; the policy is lwm's scripted OpenAI-compatible server, the
environment lwm's OpenEnv app on loopback. The rewards verifiers records must be the task checkers'.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("openenv.core")
from lwm.rollout.tasks import get_task  # noqa: E402
from lwm.serve.openenv import openenv_app  # noqa: E402
from lwm.serve.session import ServeConfig  # noqa: E402
from lwm.testing.asgi import ThreadedServer  # noqa: E402
from lwm.testing.openai_server import ScriptedServer  # noqa: E402

VF_EVAL = Path(__file__).parents[2] / ".venv-verifiers" / "bin" / "vf-eval"
pytestmark = pytest.mark.skipif(not VF_EVAL.exists(), reason="verifiers' venv is missing: run `make verifiers`")


def vf_eval(server_url: str, policy_url: str, tasks: list[str], out: Path) -> dict[str, float]:
    """Run verifiers' eval on ``tasks``; each task's recorded reward, by task id."""
    command = [str(VF_EVAL), "lwm-tasks", "--env.taskset.base-url", server_url, "--env.taskset.tasks",
               json.dumps(tasks), "-m", "scripted", "--client.base-url", policy_url,
               "--client.api-key-var", "NO_KEY_NEEDED", "--no-push", "--no-rich", "--output-dir", str(out)]
    # as on a machine with no route out: every proxy a dead local port (uv, httpx and pip honour them), loopback
    # exempt, and uv's cache new, so the chat program's environment is built from the wheels fetched at setup
    dead = "http://127.0.0.1:9"
    offline = {"HTTP_PROXY": dead, "HTTPS_PROXY": dead, "ALL_PROXY": dead, "http_proxy": dead, "https_proxy": dead,
               "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
               "UV_CACHE_DIR": str(out.parent / "uv-cache")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=out.parent,
                          env={**os.environ, **offline})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (traces,) = out.glob("*/traces.jsonl")
    rewards = {}
    for line in traces.read_text().splitlines():
        episode = json.loads(line)
        assert episode["ok"], episode["errors"]
        (trace,) = episode["traces"]
        rewards[episode["task"]["data"]["reset"]["task"]] = trace["rewards"]["lwm_reward"]["score"]
    return rewards


def told(messages: list[dict]) -> str:
    return str(messages[0]["content"]) if messages else ""


def gold_table(task_id: str) -> str:
    spec = get_task(task_id).check
    rows = [" | ".join(spec.columns), " | ".join("---" for _ in spec.columns)]
    return "\n".join(rows + [" | ".join(row[c] for c in spec.columns) for row in spec.gold])


def test_verifiers_plays_simulated_search_tasks_and_records_the_checkers_reward(tmp_path):
    right, wrong = "search/signal-0000", "search/signal-0001"

    def policy(messages: list[dict]) -> str:
        if len(messages) == 1:  # told the task and how to act (the reset's info.prompt): search once
            assert "Task: Fill in a table" in told(messages) and "final_answer" in told(messages)
            return '```json\n{"name": "search", "arguments": {"query": "signal(7) default action"}}\n```'
        answer = gold_table(right) if "SIGFPE" in told(messages) else "I could not find it."
        return json.dumps({"name": "final_answer", "arguments": {"answer": answer}})

    with ScriptedServer(policy) as agent:
        config = ServeConfig(domain="search", model="copy-last", store=tmp_path / "served")
        with ThreadedServer(openenv_app(config)) as server:
            rewards = vf_eval(server.url, agent.base_url, [right, wrong], tmp_path / "out")
        asked = [r["messages"] for r in agent.requests]
    assert rewards == {right: 1.0, wrong: 0.0}
    assert sorted(len(m) for m in asked) == [1, 1, 3, 3]  # each episode: the task, then the search's observation


@pytest.mark.skipif(not (shutil.which("tmux") and shutil.which("bwrap")), reason="needs tmux and bubblewrap")
def test_verifiers_plays_real_terminal_tasks_with_the_real_checker(tmp_path):
    def policy(messages: list[dict]) -> str:
        if len(messages) == 1:
            return json.dumps({"action": [{"keystrokes": "wc -l < data.txt > count.txt\n", "duration": 0.5}]})
        return '```json\n{"name": "final_answer", "arguments": {"answer": "done"}}\n```'

    with ScriptedServer(policy) as agent:
        config = ServeConfig(domain="terminal", mode="real")
        with ThreadedServer(openenv_app(config)) as server:
            # the count is right for count-lines; create-file's file is never made: the checker says 0
            rewards = vf_eval(server.url, agent.base_url, ["terminal/count-lines-0000", "terminal/create-file-0000"],
                              tmp_path / "out")
    assert rewards == {"terminal/count-lines-0000": 1.0, "terminal/create-file-0000": 0.0}
