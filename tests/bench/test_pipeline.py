"""The benchmark from Python (lwm.bench.pipeline), without the CLI: the same run folder, resume and refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lwm.bench import pipeline
from lwm.model_options import ModelOptions

DATA = Path(__file__).parents[2] / "data" / "bench-sample"


class Recorder:
    def __init__(self):
        self.said: list[str] = []
        self.ticks = 0

    def say(self, text):
        self.said.append(text)

    def warn(self, text):
        self.said.append("warn: " + text)

    def stage(self, label, total):
        from contextlib import contextmanager

        @contextmanager
        def bar():
            def tick():
                self.ticks += 1
            yield tick
        return bar()


def test_infer_judge_score_from_python(tmp_path):
    out = tmp_path / "run"
    recorder = Recorder()
    samples = pipeline.infer(DATA, out, ModelOptions("copy-last", max_tokens=64), limit=2, concurrency=4,
                             reporter=recorder)
    assert len(samples) == 12 and recorder.ticks == 12  # 2 of each of the 6 domains, one tick a prediction
    by_key = {s.key: s for s in samples}
    pipeline.judge(by_key, out, pipeline.JudgeOptions("rules"), reporter=recorder)
    scores = pipeline.score(out, by_key)
    written = json.loads((out / "scores.json").read_text())
    assert written["overall"] == scores["overall"] and 0 <= scores["overall"] <= 100 and scores["samples"] == 12
    assert Path(scores["report"]).is_file()
    assert scores["skill_over_copy_last"]  # the rule judge's floor costs nothing
    assert any(line.startswith("predictions in") for line in recorder.said)

    again = Recorder()  # a rerun resumes: nothing left to predict
    pipeline.infer(DATA, out, ModelOptions("copy-last", max_tokens=64), limit=2, reporter=again)
    assert again.ticks == 0 and any(line.startswith("resuming: 12 samples") for line in again.said)


def test_score_without_a_report_still_gives_skill_over_the_floors(tmp_path):
    """`lwm bench score --no-report` once dropped the skill tables a run had written into scores.json."""
    from typer.testing import CliRunner

    from lwm.cli import app

    out = tmp_path / "run"
    by_key = {s.key: s for s in pipeline.infer(DATA, out, ModelOptions("copy-last", max_tokens=64), limit=2)}
    pipeline.judge(by_key, out, pipeline.JudgeOptions("rules"))
    result = CliRunner().invoke(app, ["bench", "score", "--out", str(out), "--no-report"])
    assert result.exit_code == 0, result.output
    scores = json.loads((out / "scores.json").read_text())
    assert scores["skill_over_copy_last"]["overall"]["samples"] and not (out / "report.html").exists()


def test_a_limited_rerun_scores_only_its_own_samples_and_records_its_limit(tmp_path):
    """`--limit 2` over a finished larger run once left scores of every row beside a skill table of a few."""
    out = tmp_path / "run"
    options = ModelOptions("copy-last", max_tokens=64)
    for limit in (4, 2):
        by_key = {s.key: s for s in pipeline.infer(DATA, out, options, limit=limit)}
        pipeline.judge(by_key, out, pipeline.JudgeOptions("rules"))
        scores = pipeline.score(out, by_key)
        assert scores["samples"] == len(by_key) == 6 * limit and scores["run"]["limit"] == limit
        assert scores["skill_over_copy_last"]["overall"]["samples"] <= 6 * limit
        page = Path(scores["report"]).read_text()
        assert f"<h1>lwm benchmark: copy-last (first {limit} samples per domain)</h1>" in page


def test_a_rerun_with_other_settings_is_refused_and_loses_nothing(tmp_path):
    out = tmp_path / "run"
    pipeline.infer(DATA, out, ModelOptions("copy-last", max_tokens=64), limit=1)
    before = (out / "predictions.jsonl").read_text()
    with pytest.raises(pipeline.BenchError, match="force-new"):
        pipeline.infer(DATA, out, ModelOptions("echo-action", max_tokens=64), limit=1)
    assert (out / "predictions.jsonl").read_text() == before


def test_no_samples_and_nothing_judged_are_clear_errors(tmp_path):
    (tmp_path / "terminal_test.jsonl").write_text("not json\n")
    recorder = Recorder()
    with pytest.raises(pipeline.BenchError, match="no benchmark samples"):
        pipeline.infer(tmp_path, tmp_path / "run", ModelOptions("copy-last"), reporter=recorder)
    assert any(line.startswith("warn: ") and "terminal_test.jsonl" in line for line in recorder.said)
    with pytest.raises(pipeline.BenchError, match="nothing judged"):
        pipeline.score(tmp_path / "empty", None)


def test_many_unreadable_lines_are_named_five_times_then_counted(tmp_path):
    (tmp_path / "terminal_test.jsonl").write_text("not json\n" * 40)
    recorder = Recorder()
    with pytest.raises(pipeline.BenchError, match="no benchmark samples.*40 problems"):
        pipeline.infer(tmp_path, tmp_path / "run", ModelOptions("copy-last"), reporter=recorder)
    warned = [line for line in recorder.said if line.startswith("warn: ")]
    assert len(warned) == 6 and warned[-1] == "warn: ... and 35 more like these"


def test_piped_bench_run_says_each_stage_once_and_a_resume_shows_no_empty_bars(tmp_path):
    import subprocess
    import sys

    lwm = str(Path(sys.executable).with_name("lwm"))
    argv = [lwm, "bench", "run", "--data", str(DATA), "--limit", "1", "--model", "copy-last", "--out", str(tmp_path)]
    first = subprocess.run(argv, capture_output=True, text=True, timeout=120).stdout
    assert first.count("infer: 6/6") == 1 and "infer ━" not in first and first.count("judge: 6/6") == 1
    again = subprocess.run(argv, capture_output=True, text=True, timeout=120).stdout
    assert "0/0" not in again and "resuming: 6 samples" in again


def test_the_committed_loso_set_is_read_compressed_32_per_domain():
    from collections import Counter

    from lwm.bench.samples import load_samples

    loso = load_samples(DATA.parent / "loso")
    assert Counter(s.domain for s in loso) == {d: 32 for d in ("mcp", "os", "search", "swe", "terminal", "web")}
    held = {"terminal:ed", "terminal:perl", "terminal:sqlite3", "terminal:tclsh"}  # none of lwm-mini's sources
    assert all(s.id.split("-s0-")[0] in {h.replace(":", "-") for h in held} for s in loso if s.domain == "terminal")
