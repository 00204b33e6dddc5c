"""bench infer/judge: prefix-ordered, resumable, surviving SIGKILL, through the real scripted server."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lwm.backends import GenerateConfig, MockBackend
from lwm.bench.run import JUDGED, PREDICTIONS, judgements, predictions, schedule
from lwm.bench.samples import BenchSample, answer_budgets, export_trajectories, load_samples, write_samples
from lwm.cli import app
from lwm.testing.openai_server import ScriptedServer
from tests.samples import trajectory

runner = CliRunner()


def read_rows(out: Path) -> dict[str, dict]:
    return {i: row.model_dump(exclude_none=True) for i, row in predictions(out).by_id().items()}
LWM = str(Path(sys.executable).parent / "lwm")


@pytest.fixture
def data(tmp_path):
    trajectories = [trajectory(d).model_copy(update={"id": f"{d}-{i}"}) for d in ("terminal", "mcp", "web")
                    for i in range(3)]
    folder = tmp_path / "data"
    write_samples(export_trajectories(trajectories), folder)
    return folder


def test_export_and_load_round_trip(data):
    samples = load_samples(data)
    assert len(samples) == 18 and {s.domain for s in samples} == {"terminal", "mcp", "web"}
    second = next(s for s in samples if s.id == "terminal-0-t2")
    messages = second.conversation().messages()
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[-1]["content"].startswith("### Turn 2") and second.reference.startswith("user@lwm")


def test_bad_lines_are_named_and_skipped(data):
    with (data / "terminal_test.jsonl").open("a") as handle:
        handle.write('{"task": "terminal", "id": "x"}\nnot json\n')
    problems = []
    samples = load_samples(data, problems)
    assert len(samples) == 18 and len(problems) == 2
    assert problems[0].startswith(f"{data / 'terminal_test.jsonl'}:7: skipped")


def test_schedule_keeps_a_trajectorys_turns_together():
    samples = [BenchSample(task="t", id=f"{tid}-{k}", prompt=[f"first {tid}", "b"], response=["r", "r"],
                           system_str="S", turn_idx=k) for k in (2, 1) for tid in ("x", "y")]
    assert [s.id for s in schedule(samples)] == ["x-1", "x-2", "y-1", "y-2"]


def test_run_is_resumable_and_rescores_nothing(data, tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["bench", "run", "--data", str(data), "--out", str(out), "--model", "mock"])
    assert result.exit_code == 0, result.output
    scores = json.loads((out / "scores.json").read_text())
    assert scores["valid"] == 18 and set(scores["domains"]) == {"terminal", "mcp", "web"}
    assert (out / "report.html").read_text().count("<details class='sample'") == 18
    before = (out / PREDICTIONS).read_text()
    again = runner.invoke(app, ["bench", "run", "--data", str(data), "--out", str(out), "--model", "mock"])
    assert "resuming: 18 samples already predicted" in again.output
    assert (out / PREDICTIONS).read_text() == before


def test_server_errors_are_recorded_then_retried_on_rerun(data, tmp_path):
    out = tmp_path / "run"
    with ScriptedServer() as server:
        server.inject("status", status=400, times=3)  # not retried by the backend: recorded as errors
        args = ["bench", "infer", "--data", str(data), "--out", str(out), "--model", "openai:scripted",
                "--base-url", server.base_url, "--concurrency", "4"]
        first = runner.invoke(app, args)
        assert "3 failed (rerun to retry)" in first.output
        second = runner.invoke(app, args)
    assert "resuming: 15 samples already predicted" in second.output
    rows = read_rows(out)
    assert len(rows) == 18 and not any(r.get("error_message") for r in rows.values())


def test_a_sample_predicted_again_is_judged_again(data, tmp_path):
    """A failed inference is judged as failed; once a rerun predicts it, judge scores the new answer."""
    out = tmp_path / "run"
    with ScriptedServer() as server:
        server.inject("status", status=400, times=2)
        args = ["bench", "infer", "--data", str(data), "--out", str(out), "--model", "openai:scripted",
                "--base-url", server.base_url, "--concurrency", "1"]
        runner.invoke(app, args)
        runner.invoke(app, ["bench", "judge", "--out", str(out)])
        failed = {i for i, j in judgements(out).by_id().items() if j.failed}
        assert len(failed) == 2
        runner.invoke(app, args)
    result = runner.invoke(app, ["bench", "judge", "--out", str(out)])
    assert result.exit_code == 0, result.output
    judged = judgements(out).by_id()
    assert len(judged) == 18 and not any(j.failed for j in judged.values())
    assert all(judged[i].gen for i in failed)
    # the file is left with one row per sample, in data order (the superseded verdicts are gone)
    assert list(judged) == [s.key for s in load_samples(data)] and (out / JUDGED).read_text().count("\n") == 18


def test_llm_judge_through_the_scripted_server(data, tmp_path):
    out = tmp_path / "run"
    runner.invoke(app, ["bench", "infer", "--data", str(data), "--out", str(out), "--model", "mock"])
    verdict = ('<final_evaluation>{"scores": {"format": 4, "factuality": 3, "consistency": 5, "realism": 4, '
               '"quality": 3}}</final_evaluation>')
    with ScriptedServer(["garbage", verdict]) as server:
        result = runner.invoke(app, ["bench", "judge", "--out", str(out), "--judge", "openai:judge",
                                     "--judge-base-url", server.base_url, "--concurrency", "1"])
    assert result.exit_code == 0, result.output
    scores = runner.invoke(app, ["bench", "score", "--out", str(out)], env={"COLUMNS": "200"})
    assert json.loads((out / "scores.json").read_text())["overall"] == pytest.approx((3.8 - 1) / 4 * 100)
    assert "Overall" in scores.output


def test_an_llm_judge_also_judges_copy_last_so_the_report_shows_skill(data, tmp_path):
    """The judge gives 4 to the model's answers and 2 to anything else (copy-last's): skill is exactly the
    difference, on the samples past their first turn; --no-floor leaves it out (no extra judge calls)."""
    def judge_answer(messages):
        seen = messages[-1]["content"]
        score = 4 if "mock observation" in seen else 2
        dims = ", ".join(f'"{d}": {score}' for d in ("format", "factuality", "consistency", "realism", "quality"))
        return f'<final_evaluation>{{"scores": {{{dims}}}}}</final_evaluation>'

    out = tmp_path / "run"
    runner.invoke(app, ["bench", "infer", "--data", str(data), "--out", str(out), "--model", "mock"])
    with ScriptedServer(judge_answer) as server:
        args = ["bench", "judge", "--out", str(out), "--judge", "openai:judge", "--judge-base-url", server.base_url]
        result = runner.invoke(app, args, env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        past_first = sum(1 for s in load_samples(data) if s.turn_idx > 1)
        assert len(server.requests) == 18 + past_first
        assert len(judgements(out / "copy-last").by_id()) == past_first
        runner.invoke(app, args)  # resumed: nothing judged twice
        assert len(server.requests) == 18 + past_first
    runner.invoke(app, ["bench", "score", "--out", str(out)])
    skill = json.loads((out / "scores.json").read_text())["skill_over_copy_last"]
    assert skill["overall"]["samples"] == past_first and skill["overall"]["skill"] == pytest.approx(50.0)
    floor_run = json.loads((out / "copy-last" / "run.json").read_text())  # as if judged by another judge
    (out / "copy-last" / "run.json").write_text(json.dumps({**floor_run, "judge": {**floor_run["judge"],
                                                                                   "temperature": 1.5}}))
    runner.invoke(app, ["bench", "score", "--out", str(out)])
    assert "skill_over_copy_last" not in json.loads((out / "scores.json").read_text())

    other = tmp_path / "no-floor"
    runner.invoke(app, ["bench", "infer", "--data", str(data), "--out", str(other), "--model", "mock"])
    with ScriptedServer(judge_answer) as server:
        runner.invoke(app, ["bench", "judge", "--out", str(other), "--judge", "openai:judge", "--judge-base-url",
                            server.base_url, "--no-floor"])
        assert len(server.requests) == 18
    runner.invoke(app, ["bench", "score", "--out", str(other)])
    assert "skill_over_copy_last" not in json.loads((other / "scores.json").read_text())


@pytest.mark.slow
def test_a_killed_inference_resumes_without_redoing_or_losing_samples(data, tmp_path):
    out = tmp_path / "run"
    with ScriptedServer(latency=0.15) as server:
        cmd = [LWM, "bench", "infer", "--data", str(data), "--out", str(out), "--model", "openai:scripted",
               "--base-url", server.base_url, "--concurrency", "2", "--no-cache"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(read_rows(out)) < 6:
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        finished = read_rows(out)
        assert 6 <= len(finished) < 18
        # Requests the killed run sent may reach the server a little later on a loaded machine: let them land.
        settled = time.monotonic()
        while time.monotonic() - settled < 0.5 and time.monotonic() < deadline + 10:
            count = len(server.requests)
            time.sleep(0.1)
            if len(server.requests) != count or server.in_flight:
                settled = time.monotonic()
        served_before = len(server.requests)
        rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        assert f"resuming: {len(finished)} samples already predicted" in rerun.stdout
        assert len(server.requests) - served_before == 18 - len(finished)  # nothing finished was recomputed
    rows = read_rows(out)
    assert len(rows) == 18 and all(rows[i] == finished[i] for i in finished)


def test_world_model_cache_makes_a_rerun_free(data, tmp_path):
    import asyncio

    from lwm.bench.run import infer
    from lwm.worldmodel import WorldModel

    backend = MockBackend()
    samples = load_samples(data)
    wm = WorldModel(backend, config=GenerateConfig())
    asyncio.run(infer(samples, wm, tmp_path / "a"))
    distinct = len({json.dumps(s.conversation().messages()) for s in samples})  # equal trajectories share answers already
    assert len(backend.calls) == distinct == 6
    asyncio.run(infer(samples, wm, tmp_path / "b"))
    assert len(backend.calls) == distinct
    assert all(r["cached"] for r in read_rows(tmp_path / "b").values())


SAMPLE_BENCH = Path(__file__).parents[2] / "data" / "bench-sample"


def test_the_sample_bench_in_the_repo_is_real_and_runs(tmp_path):
    samples = load_samples(SAMPLE_BENCH)
    counts = {d: sum(s.domain == d for s in samples) for d in {s.domain for s in samples}}
    assert set(counts) == {"terminal", "swe", "mcp", "search", "web", "os"} and min(counts.values()) >= 20
    assert any("user@sandbox:~$" in s.reference for s in samples if s.domain == "terminal")
    assert any("URL: http://shop.lwm.test/" in s.reference for s in samples if s.domain == "web")
    result = runner.invoke(app, ["bench", "run", "--data", str(SAMPLE_BENCH), "--out", str(tmp_path),
                                 "--model", "mock", "--limit", "5"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "scores.json").read_text())["valid"] == 30 and "Overall" in result.output


@pytest.mark.embedded
def test_sample_bench_runs_offline_on_the_embedded_model(tmp_path):
    result = runner.invoke(app, ["bench", "run", "--data", str(SAMPLE_BENCH / "terminal_test.jsonl"), "--out",
                                 str(tmp_path), "--model", "embedded", "--judge", "rules", "--limit", "2",
                                 "--max-tokens", "48"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert scores["valid"] == 2 and "Terminal" in result.output and "Overall" in result.output


def _bench(*args: str):
    return runner.invoke(app, ["bench", *args], env={"COLUMNS": "200"})


def test_a_resume_with_other_settings_is_refused_and_force_new_sets_the_old_run_aside(data, tmp_path):
    out = tmp_path / "run"
    base = ["run", "--data", str(data), "--out", str(out), "--model", "mock"]
    assert _bench(*base).exit_code == 0
    run = json.loads((out / "run.json").read_text())
    budgets = {"mcp": 256, "terminal": 256, "web": 256}  # sized per domain from the data (short observations)
    assert run["infer"]["model"] == "mock" and run["infer"]["max_tokens"] == budgets and run["infer"]["finished"]
    assert run["judge"] == {**run["judge"], "judge": "rules"} and run["infer"]["lwm"]
    scores = json.loads((out / "scores.json").read_text())
    assert scores["run"]["infer"]["data"] == run["infer"]["data"]  # scores.json says what made them
    assert "infer model</th><td>mock" in (out / "report.html").read_text()
    before = (out / PREDICTIONS).read_text()

    other = _bench(*base, "--max-tokens", "100")  # other sampling: its rows must not join these
    assert other.exit_code == 2 and "lwm: error:" in other.output and f"max_tokens: {budgets} -> 100" in other.output
    assert "--force-new" in other.output and (out / PREDICTIONS).read_text() == before
    with (data / "web_test.jsonl").open("a") as handle:  # other data, same path
        handle.write((data / "web_test.jsonl").read_text().splitlines()[0].replace('"id": "', '"id": "new-') + "\n")
    changed = _bench(*base)
    assert changed.exit_code == 2 and "data:" in changed.output
    judge = _bench("judge", "--out", str(out), "--judge", "mock")  # another judge over these judgements
    assert judge.exit_code == 2 and "judge: 'rules' -> 'mock'" in judge.output

    fresh = _bench(*base, "--max-tokens", "100", "--force-new")
    assert fresh.exit_code == 0, fresh.output
    (previous,) = out.glob("previous-*")
    assert (previous / PREDICTIONS).read_text() == before and (previous / "run.json").is_file()
    assert json.loads((out / "run.json").read_text())["infer"]["max_tokens"] == 100


def test_rows_with_no_recorded_settings_are_not_resumed(data, tmp_path):
    out = tmp_path / "run"
    assert _bench("infer", "--data", str(data), "--out", str(out), "--model", "mock").exit_code == 0
    (out / "run.json").write_text(json.dumps({"data": str(data)}))  # what an older lwm wrote
    again = _bench("infer", "--data", str(data), "--out", str(out), "--model", "mock")
    assert again.exit_code == 2 and "no recorded settings" in again.output


def test_ctrl_c_stops_an_embedded_run_promptly_and_keeps_what_finished(tmp_path):
    out = tmp_path / "run"
    cmd = [LWM, "bench", "infer", "--data", str(SAMPLE_BENCH / "terminal_test.jsonl"), "--out", str(out),
           "--model", "embedded", "--max-tokens", "400", "--no-cache"]
    # A suite started in the background (nohup, &) passes SIGINT on ignored: give the run a terminal's default.
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not read_rows(out):
        time.sleep(0.05)
    assert read_rows(out), "no sample finished"
    proc.send_signal(signal.SIGINT)
    # Generation runs in a thread asyncio cannot stop: without the per-token stop, every queued sample of the
    # file (36, minutes of generation) would run first. A sample's prompt evaluation is not interruptible, so
    # the bound leaves room for a loaded machine.
    try:
        _, stderr = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
        pytest.fail(f"Ctrl+C did not stop the run; it had predicted {len(read_rows(out))} samples: {stderr[-2000:]}")
    kept = read_rows(out)
    assert proc.returncode == 130, stderr
    assert f"interrupted: {len(kept)} prediction rows kept" in stderr and len(kept) < len(load_samples(SAMPLE_BENCH / "terminal_test.jsonl"))


def test_a_sample_that_can_never_fit_is_said_once_and_not_retried(data, tmp_path):
    import asyncio

    from lwm.bench.run import infer, pending_inference
    from lwm.worldmodel import WorldModel

    samples = load_samples(data)
    wm = WorldModel(MockBackend(context_window=64), config=GenerateConfig(max_tokens=32), cache=False)
    asyncio.run(infer(samples, wm, tmp_path))
    rows = read_rows(tmp_path)
    assert len(rows) == 18 and all(r["never_fits"] and "window" in r["error_message"] for r in rows.values())
    assert pending_inference(samples, tmp_path) == []  # the same settings would fail the same way


def test_empty_data_is_an_error_not_an_empty_run(tmp_path):
    (tmp_path / "terminal_test.jsonl").write_text("")
    result = _bench("run", "--data", str(tmp_path), "--out", str(tmp_path / "run"), "--model", "mock")
    assert result.exit_code == 2 and "no benchmark samples in" in result.output
    assert not (tmp_path / "run" / "predictions.jsonl").exists()


def test_answer_budgets_follow_each_domains_real_observations():
    def sample(domain: str, chars: int, k: int) -> BenchSample:
        return BenchSample(task=domain, id=f"{domain}-{k}", prompt=["a"], response=["x" * chars])

    samples = [sample("terminal", 400, k) for k in range(19)] + [sample("terminal", 4000, 19)]
    samples += [sample("web", 40_000, k) for k in range(3)] + [sample("mcp", 10, 0)]
    budgets = answer_budgets(samples, window=8192)
    assert budgets["terminal"] == 2560  # the 95th percentile (4000 chars / 2 * 1.25), rounded up to 64
    assert budgets["web"] == 4096 and budgets["mcp"] == 256  # half the window; the floor
    assert answer_budgets(samples[:19], window=None) == {"terminal": 256}


def test_bench_sends_each_domain_its_own_budget_and_pins_it(data, tmp_path):
    out = tmp_path / "run"
    with ScriptedServer() as server:
        args = ["bench", "infer", "--data", str(data), "--out", str(out), "--model", "openai:scripted",
                "--base-url", server.base_url, "--limit", "1"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        sent = {body["max_tokens"] for body in server.requests}
        fixed = runner.invoke(app, [*args, "--max-tokens", "300"])
    expected = answer_budgets(load_samples(data), None)
    assert sent == set(expected.values()) and "answer budget per domain" in result.output
    assert json.loads((out / "run.json").read_text())["infer"]["max_tokens"] == expected
    assert fixed.exit_code == 2 and "max_tokens" in fixed.output  # a resume with another budget is refused


def test_spread_samples_reach_every_turn_depth_even_when_the_stride_matches_the_session_length():
    """8-turn sessions and a stride of 8 once picked turn 1 of every session."""
    from lwm.bench.samples import spread

    samples = [BenchSample(task="web", id=f"s{t}-t{k}", prompt=["a"] * 8, response=["b"] * 8, turn_idx=k)
               for t in range(40) for k in range(1, 9)]
    picked = spread(samples, 40)
    assert len(picked) == 40 and len({s.turn_idx for s in picked}) >= 6
    assert spread(samples, 40) == picked  # deterministic
