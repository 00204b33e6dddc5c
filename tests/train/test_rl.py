"""`lwm train rl` (GRPO with the rule-metric reward) at toy size."""

import json

import pytest
from typer.testing import CliRunner

from lwm.cli import app
from lwm.data.build import build
from lwm.train.rl import rule_reward
from tests.samples import trajectory

pytest.importorskip("trl")


def test_rule_reward_prefers_the_real_observation():
    real = "user@lwm:~$ ls\nnotes.txt\nuser@lwm:~$"
    good = [{"role": "assistant", "content": f"<predicted_observation>{real}</predicted_observation>"}]
    bad = [{"role": "assistant", "content": "<predicted_observation>I cannot do that.</predicted_observation>"}]
    rewards = rule_reward([good, bad], reference=[real, real], history=["", ""])
    assert rewards[0] == pytest.approx(1.0) and 0 <= rewards[1] < 0.5


def test_grpo_runs_with_the_rule_reward(tmp_path, tiny_model_dir):
    data = tmp_path / "rl.jsonl"
    build("rl", [trajectory(d) for d in ("terminal", "mcp")], data, compact=True)
    config = tmp_path / "rl.json"
    config.write_text(json.dumps({"data": str(data), "output_dir": str(tmp_path / "rl"), "model": str(tiny_model_dir),
                                  "max_steps": 2, "batch_size": 2, "num_generations": 2,
                                  "max_completion_length": 8, "save_steps": 2}))
    result = CliRunner().invoke(app, ["train", "rl", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "rl" / "checkpoint-2").is_dir() and (tmp_path / "rl" / "final" / "adapter_config.json").exists()
