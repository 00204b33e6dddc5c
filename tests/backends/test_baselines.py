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
    assert itself["overall"]["se"] == 0.0  # paired: every sample's difference is 0
    echo = skills["echo-action"]["overall"]
    assert echo["skill"] < -10 and 0 < echo["se"] < -echo["skill"] / 2  # the paired s.e. says it is no accident


def test_copy_retrieved_answers_the_nearest_real_transition_never_the_sessions_own():
    from lwm.domains import get_domain
    from lwm.retrieval import TransitionIndex
    from lwm.types import Action, Observation, Provenance, Trajectory
    from lwm.worldmodel import WorldModel

    def session(tid, source, output):
        t = Trajectory(id=tid, domain="terminal", provenance=Provenance(source="real", extra={"source": source}))
        long = output + "\n" + "x" * 900  # longer than a prompt shows of an example: the floor copies it whole
        return t.extended(Action(content=[{"keystrokes": "cat notes.txt\n", "duration": 0.1}]),
                          Observation(content=long))

    own, other = session("own", "a", "own answer"), session("other", "b", "the other session's answer")
    model = WorldModel("copy-retrieved", cache=False, retriever=TransitionIndex.build([own, other]))
    assert model.edits and not model.well_formed  # asked for edits; its answers are never repaired
    asked = Trajectory(id="own", domain="terminal")
    conv = model.conversation(asked, Action(content=[{"keystrokes": "cat notes.txt\n", "duration": 0.1}]))
    got = asyncio.run(model.complete(conv, get_domain("terminal"), exclude={"own"}))
    assert got.content == other.turns[0].observation.content and got.metadata["retrieved"] == ["other-t1"]
    nothing = WorldModel("copy-retrieved", cache=False, retriever=TransitionIndex.build([own]))
    assert asyncio.run(nothing.complete(conv, get_domain("terminal"), exclude={"own"})).content == ""


def test_a_rule_judged_run_shows_skill_over_copy_retrieved_too(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["bench", "run", "--data", str(BENCH), "--model", "copy-last", "--limit", "4",
                                 "--out", str(out)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "skill over copy-retrieved" in result.output
    skill = json.loads((out / "scores.json").read_text())["skill_over_copy_retrieved"]
    assert skill["overall"]["samples"] > 0 and "copy_retrieved" in skill["overall"]
    assert "<h2>Skill over copy-retrieved</h2>" in (out / "report.html").read_text()
