"""Resuming picks the newest complete checkpoint (a kill can leave one half written)."""

from lwm.train.common import last_checkpoint


def test_a_checkpoint_cut_short_by_a_kill_is_passed_over(tmp_path):
    for step, complete in ((2, True), (10, True), (12, False)):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        if complete:
            (folder / "trainer_state.json").write_text("{}")
    assert last_checkpoint(tmp_path) == str(tmp_path / "checkpoint-10")
    assert last_checkpoint(tmp_path / "none") is None
