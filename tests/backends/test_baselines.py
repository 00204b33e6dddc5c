import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from lwm.backends import GenerateConfig, load_backend
from lwm.cli import app

runner = CliRunner()
BENCH = Path(__file__).parents[2] / "data" / "bench-sample"
TALK = [{"role": "system", "content": "S"}, {"role": "user", "content": "ls"},
        {"role": "assistant", "content": "**Environment Observation:**\na.txt"}, {"role": "user", "content": "pwd"}]


def answer(spec, messages):
    return asyncio.run(load_backend(spec).generate(messages, GenerateConfig())).text


def test_copy_last_repeats_the_previous_observation_and_echo_action_the_action():
    assert "a.txt" in answer("copy-last", TALK) and "pwd" not in answer("copy-last", TALK)
    assert answer("copy-last", TALK[:2]) == ""  # a first turn has nothing to copy
    assert "<predicted_observation>\npwd\n</predicted_observation>" == answer("echo-action", TALK)


def test_every_rule_judged_report_shows_skill_over_copy_last(tmp_path):
    """copy-last measured against itself has exactly no skill; echo-action has less than none."""
    skills = {}
    for model in ("copy-last", "echo-action"):
        out = tmp_path / model
        result = runner.invoke(app, ["bench", "run", "--data", str(BENCH), "--model", model, "--out", str(out)])
        assert result.exit_code == 0, result.output
        assert "skill over copy-last" in result.output
        skills[model] = json.loads((out / "scores.json").read_text())["skill_over_copy_last"]
    itself = skills["copy-last"]
    assert itself["overall"]["samples"] > 100 and all(e["skill"] == 0.0 for e in itself["domains"].values())
    assert skills["echo-action"]["overall"]["skill"] < -10
