"""``accelerate launch`` with two processes on the CPU: how lwm trains on several GPUs, tried where there are none.

Each rank trains on its own share of the rows (DDP over gloo); rank 0 alone records the run, writes the
tokenizer and reports; in agent training each rank records its own rollouts.
"""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("accelerate")
pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
ROWS = 160


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(config: Path, *command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
                           "--main_process_ip", "127.0.0.1", "--main_process_port", str(_free_port()),
                           "-m", "lwm", *command, "--config", str(config)],
                          capture_output=True, text=True, timeout=900, env=env, cwd=config.parent)


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rows") / "sft.jsonl"
    subprocess.run([sys.executable, "-m", "lwm", "data", "build", str(ROOT / "data/samples/corpus-v1-sample.jsonl"),
                    "--stage", "sft", "--compact", "--max-tokens", "512", "--out", str(out)],
                   check=True, capture_output=True, timeout=300)
    lines = out.read_text(encoding="utf-8").splitlines()
    out.write_text("\n".join((lines * (ROWS // len(lines) + 1))[:ROWS]) + "\n", encoding="utf-8")
    return out


def test_sft_runs_on_two_processes_and_rank_0_alone_reports(tmp_path, rows):
    config = tmp_path / "sft.yaml"
    config.write_text(f"data: {rows}\noutput_dir: {tmp_path / 'out'}\nmax_steps: 3\nper_device_train_batch_size: 1\n"
                      "max_length: 512\nsave_steps: 3\nlogging_steps: 1\n", encoding="utf-8")
    done = _launch(config, "train", "sft")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("trained ") == 1, done.stdout
    state = json.loads((tmp_path / "out/checkpoint-3/trainer_state.json").read_text())
    assert round(state["epoch"] * ROWS) == 3 * 2  # three steps of one row on each of two ranks
    assert (tmp_path / "out/final/adapter_model.safetensors").is_file()
    assert (tmp_path / "out/final/tokenizer.json").is_file()


def test_agent_grpo_runs_on_two_processes_and_each_rank_records_its_rollouts(tmp_path):
    config = tmp_path / "grpo.yaml"
    config.write_text(f"output_dir: {tmp_path / 'out'}\ndomain: search\nmode: sim\nworld_model: mock\nepisode_steps: 1\n"
                      "reply_tokens: 8\nmax_steps: 1\nper_device_train_batch_size: 2\nnum_generations: 2\n"
                      "max_completion_length: 128\nsave_steps: 1\nlogging_steps: 1\n", encoding="utf-8")
    done = _launch(config, "agent", "train")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("trained ") == 1, done.stdout
    ids = []
    for folder in ("rollouts", "rollouts-rank1"):
        lines = (tmp_path / "out" / folder / "trajectories.jsonl").read_text().splitlines()
        assert len(lines) == 2 and all(json.loads(line)["domain"] == "search" for line in lines)
        ids += [json.loads(line)["id"] for line in lines]
    assert len(set(ids)) == 4
