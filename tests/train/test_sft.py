"""`lwm train sft` at toy size: a tiny local model, a few LoRA steps, a checkpoint, a resume."""

import json

import pytest
from typer.testing import CliRunner

from lwm.cli import app
from lwm.data.build import build
from lwm.train.config import SFTStageConfig, load_config
from tests.samples import trajectory

pytestmark = pytest.mark.slow  # trains or converts real models

pytest.importorskip("trl")
pytest.importorskip("peft")


def test_config_loading_names_unknown_and_missing_fields(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("data: x.jsonl\noutput_dir: out\nmax_step: 3\n")
    with pytest.raises(ValueError, match="max_step.*neither SFTConfig fields nor lwm's"):
        load_config(SFTStageConfig, path)
    path.write_text("data: x.jsonl\n")
    with pytest.raises(ValueError, match="missing required fields \\['output_dir'\\]"):
        load_config(SFTStageConfig, path)


def test_sft_trains_checkpoints_and_resumes(tmp_path, tiny_model_dir):
    data = tmp_path / "sft.jsonl"
    build("sft", [trajectory(d) for d in ("terminal", "mcp", "swe")], data, compact=True)
    config = tmp_path / "sft.yaml"
    config.write_text(json.dumps({"data": str(data), "output_dir": str(tmp_path / "run"), "model": str(tiny_model_dir),
                                  "max_steps": 2, "per_device_train_batch_size": 2, "max_length": 2048, "save_steps": 2,
                                  "lora_target_modules": ["q_proj", "v_proj"]}))
    runner = CliRunner()
    first = runner.invoke(app, ["train", "sft", "--config", str(config)])
    assert first.exit_code == 0, first.output
    assert (tmp_path / "run" / "checkpoint-2").is_dir() and (tmp_path / "run" / "final" / "adapter_config.json").exists()
    second = runner.invoke(app, ["train", "sft", "--config", str(config), "--set", "max_steps=3"])
    assert second.exit_code == 0, second.output
    assert "resumed from" in second.output and (tmp_path / "run" / "checkpoint-3").is_dir()


def test_cpt_trains_on_packed_text(tmp_path, tiny_model_dir):
    data = tmp_path / "cpt.jsonl"
    build("cpt", [trajectory(d) for d in ("terminal", "web")], data, block_chars=2000)
    config = tmp_path / "cpt.json"
    config.write_text(json.dumps({"data": str(data), "output_dir": str(tmp_path / "cpt"), "model": str(tiny_model_dir),
                                  "max_steps": 2, "per_device_train_batch_size": 1, "max_length": 128, "save_steps": 2}))
    result = CliRunner().invoke(app, ["train", "cpt", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "cpt" / "final" / "adapter_config.json").exists()


def test_sft_data_without_completions_is_refused(tmp_path, tiny_model_dir):
    data = tmp_path / "cpt.jsonl"
    build("cpt", [trajectory("terminal")], data)
    config = tmp_path / "sft.json"
    config.write_text(json.dumps({"data": str(data), "output_dir": str(tmp_path / "o"), "model": str(tiny_model_dir),
                                  "max_steps": 1}))
    result = CliRunner().invoke(app, ["train", "sft", "--config", str(config)])
    assert result.exit_code != 0 and "no 'completion' column" in str(result.exception)


def test_a_later_stage_keeps_training_the_earlier_stage_adapter(tmp_path, tiny_model_dir):
    from safetensors.numpy import load_file

    cpt, sft = tmp_path / "cpt.jsonl", tmp_path / "sft.jsonl"
    build("cpt", [trajectory("terminal")], cpt, block_chars=2000)
    build("sft", [trajectory("terminal")], sft, compact=True)
    runner = CliRunner()
    first = tmp_path / "cpt.json"
    first.write_text(json.dumps({"data": str(cpt), "output_dir": str(tmp_path / "a"), "model": str(tiny_model_dir),
                                 "max_steps": 1, "per_device_train_batch_size": 1, "max_length": 128, "lora_r": 4,
                                 "lora_target_modules": ["q_proj", "v_proj", "down_proj"]}))
    assert runner.invoke(app, ["train", "cpt", "--config", str(first)]).exit_code == 0
    second = tmp_path / "sft.json"
    second.write_text(json.dumps({"data": str(sft), "output_dir": str(tmp_path / "b"),
                                  "model": str(tmp_path / "a" / "final"), "max_steps": 2, "per_device_train_batch_size": 1,
                                  "max_length": 2048, "learning_rate": 0.01}))
    result = runner.invoke(app, ["train", "sft", "--config", str(second)])
    assert result.exit_code == 0, result.output
    before = load_file(str(tmp_path / "a" / "final" / "adapter_model.safetensors"))
    after = load_file(str(tmp_path / "b" / "final" / "adapter_model.safetensors"))
    assert before.keys() == after.keys() and any("down_proj" in k for k in after)  # the same adapter (r=4, 3 modules)
    assert any(not (before[k] == after[k]).all() for k in before)  # ...trained further
    config = json.loads((tmp_path / "b" / "final" / "adapter_config.json").read_text())
    assert config["r"] == 4 and config["base_model_name_or_path"] == str(tiny_model_dir)


def test_max_minutes_ends_a_run_at_a_checkpoint_and_a_rerun_resumes_it(tmp_path, tiny_model_dir):
    from lwm.train.sft import train_sft

    data = tmp_path / "sft.jsonl"
    build("sft", [trajectory(d) for d in ("terminal", "mcp", "swe")], data, compact=True)

    def config(minutes):
        return SFTStageConfig(data=str(data), output_dir=str(tmp_path / "run"), model=str(tiny_model_dir),
                              max_minutes=minutes, lora_target_modules=["q_proj", "v_proj"],
                              trainer={"max_steps": 50, "per_device_train_batch_size": 1, "max_length": 2048,
                                       "save_steps": 1000})
    first = train_sft(config(1e-6))  # the deadline has passed by the end of the first step
    assert first["stopped_early"] and first["global_step"] == 1
    assert (tmp_path / "run" / "checkpoint-1").is_dir() and (tmp_path / "run" / "final").is_dir()
    second = train_sft(config(None))
    assert second["resumed_from"].endswith("checkpoint-1") and second["global_step"] == 50
    assert not second["stopped_early"]
