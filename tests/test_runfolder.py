"""Pinned run settings: recorded on first use, checked on resume, set aside without loss."""

import json

import pytest

from lwm.runfolder import SettingsChanged, digest, finish, pin, read_run, set_aside


def test_settings_are_recorded_then_checked(tmp_path):
    pin(tmp_path, "infer", {"model": "a", "seed": 0}, has_rows=False, way_out="use a new folder")
    recorded = read_run(tmp_path)["infer"]
    assert recorded["model"] == "a" and recorded["lwm"] and recorded["started"]
    pin(tmp_path, "infer", {"model": "a", "seed": 0}, has_rows=True, way_out="-")  # the same: resumes
    with pytest.raises(SettingsChanged, match=r"model: 'a' -> 'b'.*use a new folder"):
        pin(tmp_path, "infer", {"model": "b", "seed": 0}, has_rows=True, way_out="use a new folder")
    pin(tmp_path, "infer", {"model": "b", "seed": 0}, has_rows=False, way_out="-")  # no rows yet: nothing to mix
    assert read_run(tmp_path)["infer"]["model"] == "b"
    finish(tmp_path, "infer")
    assert read_run(tmp_path)["infer"]["finished"]


def test_rows_without_settings_and_an_unreadable_run_file_are_refused(tmp_path):
    with pytest.raises(SettingsChanged, match="no recorded settings"):
        pin(tmp_path, "eval", {"policy": "x"}, has_rows=True, way_out="-")
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(SettingsChanged, match="run.json is unreadable"):
        read_run(tmp_path)


def test_set_aside_moves_files_and_loses_nothing(tmp_path):
    (tmp_path / "predictions.jsonl").write_text("row\n")
    (tmp_path / "run.json").write_text(json.dumps({"data": "d"}))
    moved = set_aside(tmp_path, ["predictions.jsonl", "run.json", "absent.jsonl"])
    assert moved is not None and (moved / "predictions.jsonl").read_text() == "row\n"
    assert not (tmp_path / "predictions.jsonl").exists() and set_aside(tmp_path, ["predictions.jsonl"]) is None


def test_digest_follows_the_bytes(tmp_path):
    (tmp_path / "a_test.jsonl").write_text("1\n")
    first = digest(tmp_path)
    assert digest(tmp_path) == first
    (tmp_path / "a_test.jsonl").write_text("2\n")
    assert digest(tmp_path) != first
