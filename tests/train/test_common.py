"""Resuming picks the newest complete checkpoint (a kill can leave one half written), of the same run only."""

import pytest

from lwm.runfolder import SettingsChanged, read_run
from lwm.train.common import last_checkpoint, pin_training
from lwm.train.config import SFTStageConfig


def test_a_checkpoint_cut_short_by_a_kill_is_passed_over(tmp_path):
    for step, complete in ((2, True), (10, True), (12, False)):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        if complete:
            (folder / "trainer_state.json").write_text("{}")
    assert last_checkpoint(tmp_path) == str(tmp_path / "checkpoint-10")
    assert last_checkpoint(tmp_path / "none") is None


def test_resume_continues_only_the_run_it_started(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text('{"prompt": "a", "completion": "b"}\n')
    out = tmp_path / "run"
    config = SFTStageConfig(data=str(data), output_dir=str(out), trainer={"max_steps": 10, "learning_rate": 1e-4})
    assert pin_training(config) is None and read_run(out)["train"]["trainer"] == {"learning_rate": 1e-4}
    (out / "checkpoint-5").mkdir()
    (out / "checkpoint-5" / "trainer_state.json").write_text("{}")
    longer = SFTStageConfig(data=str(data), output_dir=str(out), trainer={"max_steps": 20, "learning_rate": 1e-4})
    assert pin_training(longer) == str(out / "checkpoint-5")  # training longer is a resume
    other = SFTStageConfig(data=str(data), output_dir=str(out), model="lwm-mini", trainer={"learning_rate": 1e-4})
    with pytest.raises(SettingsChanged, match="model: 'smollm2' -> 'lwm-mini'"):
        pin_training(other)
    data.write_text('{"prompt": "a", "completion": "c"}\n')  # the rows changed under the same name
    with pytest.raises(SettingsChanged, match="data_digest"):
        pin_training(longer)
    restart = SFTStageConfig(data=str(data), output_dir=str(out), resume=False, trainer={"learning_rate": 1e-4})
    assert pin_training(restart) is None  # resume: false starts over, with these settings
