"""What the commands share (lwm.cli.common): the error exit, the session a command continues, a stage config."""

import json

import pytest
import typer

from lwm.cli.common import fail, load_state, stage_config
from lwm.train.config import SFTStageConfig


def test_fail_says_lwm_error_and_exits_with_the_code(capsys):
    exit_ = fail("no such file", 2)
    assert isinstance(exit_, typer.Exit) and exit_.exit_code == 2
    assert capsys.readouterr().err == "lwm: error: no such file\n"


def test_the_session_comes_from_a_history_or_is_fresh_and_a_mismatch_is_refused(tmp_path):
    assert load_state("mcp", None, None).domain == "mcp"
    history = tmp_path / "h.json"
    history.write_text(json.dumps({"domain": "terminal", "turns": []}))
    assert load_state(None, None, history).domain == "terminal"
    with pytest.raises(typer.Exit):
        load_state("web", None, history)


def test_a_stage_config_takes_overrides_as_yaml_values_and_names_a_bad_field(tmp_path):
    path = tmp_path / "sft.yaml"
    path.write_text("data: rows.jsonl\noutput_dir: out\n")
    config = stage_config(SFTStageConfig, path, ["max_steps=7", "lora=false", "max_minutes=1.5"])
    assert (config.trainer["max_steps"], config.lora, config.max_minutes) == (7, False, 1.5)
    with pytest.raises(typer.BadParameter, match="nonsense"):
        stage_config(SFTStageConfig, path, ["nonsense=1"])
