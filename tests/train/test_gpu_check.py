"""benchmarks/gpu_check.py --cpu: training and Sim RL through lwm's own code at tiny size, on whatever device is here."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_the_gpu_check_runs_end_to_end_on_the_cpu(tmp_path):
    out = tmp_path / "check.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--cpu", "--json", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["size"] == "cpu" and result["eval_device"] == "cpu"
    assert result["sft_tokens"] > 0 and result["sft_tokens_per_s"] > 0
    assert result["eval_episodes"] == 4 and result["eval_generated_tokens"] > 0
    assert result["grpo_steps"] == 1 and result["grpo_logged_steps"] == 1
