"""A Sim RL experiment's results folder: arms added from real evals, the paired table computed from it."""

import json

import pytest
from typer.testing import CliRunner

from lwm.agent.evaluate import eval_tasks
from lwm.agent.experiment import add_arm, arm_table, sampling_spread
from lwm.cli import app
from lwm.rollout.tasks import tasks


@pytest.fixture(scope="module")
def evals(tmp_path_factory):
    """The expert (solves every task) and a mock policy (never answers right), each at two seeds, in the real
    search engine, greedy, and each once sampled (temperature 1); and one simulated eval."""
    root = tmp_path_factory.mktemp("evals")
    chosen = tasks("search", "heldout", ["signal"])[:3]
    for policy in ("expert", "mock"):
        for seed in (0, 1):
            eval_tasks(chosen, "real", policy, out=root / f"{policy}-s{seed}", seed=seed, max_steps=3)
        eval_tasks(chosen, "real", policy, out=root / f"{policy}-t1-s1", seed=1, max_steps=3, temperature=1.0)
    eval_tasks(chosen, "sim", "expert", "copy-last", out=root / "sim-expert", max_steps=3)
    return root


def test_arms_pair_with_the_warm_start_by_task_and_seed(evals, tmp_path):
    results = tmp_path / "simrl-test"
    assert add_arm(results, "warm", [evals / "mock-s0", evals / "mock-s1"]) == 6
    assert add_arm(results, "real", [evals / "expert-s0", evals / "expert-s1"], note="the scripted expert") == 6
    assert add_arm(results, "real", [evals / "expert-s0"]) == 3  # added again: replaced, not doubled
    warm, real = arm_table(results)
    assert (warm.arm, warm.episodes, warm.seeds, warm.mean, warm.diff) == ("warm", 6, 2, 0.0, None)
    assert (real.arm, real.episodes, real.pairs, real.wins, real.diff, real.diff_se) == ("real", 6, 6, 6, 1.0, 0.0)
    assert real.spread == 0.0  # the expert answers every seed alike
    config = json.loads((results / "config.json").read_text())
    assert config["real"]["evals"]["0"]["policy"] == "expert" and set(config["real"]["commits"]) == {"0", "1"}
    rows = [json.loads(line) for line in (results / "episodes.jsonl").read_text().splitlines()]
    assert set(rows[0]) == {"arm", "task", "seed", "reward", "steps", "temperature"}


def test_sampled_evaluations_are_a_table_of_their_own_paired_by_seed(evals, tmp_path):
    results = tmp_path / "r"
    add_arm(results, "warm", [evals / "mock-s0"])
    add_arm(results, "warm", [evals / "mock-t1-s1"])  # greedy and sampled rows of one arm and seed kept apart
    add_arm(results, "real", [evals / "expert-s0", evals / "expert-t1-s1"])
    warm, real = arm_table(results)
    assert (warm.episodes, real.episodes, real.pairs, real.diff) == (3, 3, 3, 1.0)
    warm, real = arm_table(results, temperature=1.0)
    assert (warm.episodes, warm.seeds, real.pairs, real.diff) == (3, 1, 3, 1.0)
    config = json.loads((results / "config.json").read_text())
    assert set(config["real"]["evals"]) == {"0", "1@t1"} and config["real"]["evals"]["1@t1"]["temperature"] == 1.0
    runner = CliRunner()
    shown = runner.invoke(app, ["agent", "experiment", "table", str(results), "--temperature", "1", "--markdown"])
    assert shown.exit_code == 0 and "| real | 3 | 1 | 1.000 | 0.000 | 3/0/0 | +1.000 |" in shown.output
    missing = runner.invoke(app, ["agent", "experiment", "table", str(results), "--temperature", "0.7"])
    assert missing.exit_code == 2 and "no episodes evaluated at temperature 0.7" in missing.output


def test_an_arm_evaluated_in_the_simulator_is_refused_and_the_table_prints(evals, tmp_path):
    with pytest.raises(ValueError, match="real environment"):
        add_arm(tmp_path / "r", "sim", [evals / "sim-expert"])
    with pytest.raises(ValueError, match="arm"):
        add_arm(tmp_path / "r", "best", [evals / "mock-s0"])
    runner = CliRunner()
    assert runner.invoke(app, ["agent", "experiment", "add", str(tmp_path / "r"), str(evals / "mock-s0"),
                               "--arm", "warm"]).exit_code == 0
    shown = runner.invoke(app, ["agent", "experiment", "table", str(tmp_path / "r"), "--markdown"])
    assert shown.exit_code == 0 and shown.output.startswith("| arm |") and "| warm | 3 | 1 |" in shown.output


def test_a_warm_start_evaluated_once_pairs_with_every_seed_of_an_arm(evals, tmp_path):
    add_arm(tmp_path / "r", "warm", [evals / "mock-s0"])
    add_arm(tmp_path / "r", "real", [evals / "expert-s0", evals / "expert-s1"])
    warm, real = arm_table(tmp_path / "r")
    assert warm.episodes == 3 and (real.pairs, real.diff) == (6, 1.0)


def test_an_evaluation_added_again_keeps_the_commit_that_first_added_it(evals, tmp_path, monkeypatch):
    import lwm.agent.experiment as experiment

    monkeypatch.setattr(experiment, "_commit", lambda: "first")
    add_arm(tmp_path / "r", "real", [evals / "expert-s0"])
    monkeypatch.setattr(experiment, "_commit", lambda: "later")
    add_arm(tmp_path / "r", "real", [evals / "expert-s0", evals / "expert-s1"])  # seed 0 resumed, seed 1 new
    assert json.loads((tmp_path / "r" / "config.json").read_text())["real"]["commits"] == {"0": "first", "1": "later"}


def test_the_by_task_standard_error_averages_each_tasks_seeds_first(evals, tmp_path):
    """Every task won at seed 0 and tied at seed 1: episode by episode the difference varies, task by task not."""
    add_arm(tmp_path / "r", "warm", [evals / "mock-s0", evals / "expert-s1"])
    add_arm(tmp_path / "r", "real", [evals / "expert-s0", evals / "expert-s1"])
    _, real = arm_table(tmp_path / "r")
    assert (real.pairs, real.diff, round(real.diff_se, 3), real.diff_se_by_task) == (6, 0.5, 0.224, 0.0)


def test_a_table_at_chosen_seeds_reads_only_those_seeds_and_keeps_the_one_greedy_warm_start(evals, tmp_path):
    results = tmp_path / "r"
    add_arm(results, "warm", [evals / "mock-s0"])
    add_arm(results, "real", [evals / "expert-s0", evals / "expert-s1"])
    warm, real = arm_table(results, seeds=[1])
    assert (warm.episodes, real.episodes, real.seeds, real.pairs, real.diff) == (3, 3, 1, 3, 1.0)
    add_arm(results, "warm", [evals / "mock-t1-s1"])
    add_arm(results, "real", [evals / "expert-t1-s1"])
    assert arm_table(results, temperature=1.0, seeds=[0]) == []  # sampled: no seed stands for another
    runner = CliRunner()
    shown = runner.invoke(app, ["agent", "experiment", "table", str(results), "--seed", "1", "--markdown"])
    assert shown.exit_code == 0 and "| real | 3 | 1 | 1.000 | 0.000 | 3/0/0 | +1.000 |" in shown.output
    missing = runner.invoke(app, ["agent", "experiment", "table", str(results), "--seed", "7", "--temperature", "1"])
    assert missing.exit_code == 2 and "at temperature 1, seeds 7" in missing.output


def test_the_spread_of_a_policys_seeds_counts_tasks_that_differ(evals):
    same = sampling_spread([evals / "expert-s0", evals / "expert-s1"])
    assert (same.tasks, same.seeds, same.mean, same.varied, same.within_sd) == (3, 2, 1.0, 0.0, 0.0)
    mixed = sampling_spread([evals / "expert-s0", evals / "mock-s1"])  # as if one policy had answered both ways
    assert mixed.varied == 1.0 and mixed.within_sd == 0.5


def test_the_committed_lookup_results_compute_the_docs_table():
    """results/simrl-lookup is committed so that a new checkout goes on from it; its warm arm is the docs' row."""
    from pathlib import Path

    results = Path(__file__).parents[2] / "results" / "simrl-lookup"
    arms = {a.arm: a for a in arm_table(results)}
    assert arms["warm"].episodes == 60 and round(arms["warm"].mean, 3) == 0.804
    assert (results / "warm-adapter" / "adapter_config.json").is_file()


def test_reward_sources_score_each_recorded_lookup_against_its_gold_row_and_its_page(tmp_path):
    """A simulated page with the wrong summary: the reader's rollout is paid by its page, not by the gold row; a
    rollout that answered the truth is paid the other way round; the CLI prints both counts."""
    from lwm.agent.experiment import reward_sources
    from lwm.backends import MockBackend
    from lwm.data import TrajectoryStore
    from lwm.rollout.loop import run_episodes
    from lwm.rollout.policies import ScriptedPolicy, call
    from lwm.worldmodel import WorldModel

    task = tasks("search", "train", ["syscall-lookup"])[0]
    name, summary = task.check.gold[0]["Call"], task.check.gold[0]["Summary"]
    page = f"1. [{name}(2) — pin pages of a fence](https://man7.org/x)"
    store = TrajectoryStore(tmp_path / "run" / "rollouts")
    for said in ("pin pages of a fence", summary, "pin pages of a fence"):
        run_episodes([task], ScriptedPolicy([call("web_search", query=f"{name} system call"), call(
            "final_answer", answer=f"| Call | Summary |\n|---|---|\n| {name} | {said} |")]), "sim", store=store,
            world_model=WorldModel(MockBackend([f"<predicted_observation>{page}</predicted_observation>"]), cache=False))
    found = reward_sources(tmp_path / "run")
    assert (found.rollouts, found.same, found.page_higher, found.gold_higher) == (3, 0, 2, 1)
    assert found.page == pytest.approx((1.0 + 0.5 + 1.0) / 3) and found.gold == pytest.approx((0.5 + 1.0 + 0.5) / 3)
    result = CliRunner().invoke(app, ["agent", "experiment", "rewards", str(tmp_path / "run"), "--markdown"])
    assert result.exit_code == 0 and "| 3 | 0.67 | 0.83 | 0 | 2 | 1 |" in result.output, result.output
    empty = CliRunner().invoke(app, ["agent", "experiment", "rewards", str(tmp_path)])
    assert empty.exit_code == 2 and "no recorded one-row lookup rollouts" in empty.output
