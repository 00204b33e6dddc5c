"""The agent loop on the real suites: scripted policies in sim and real, recorded trajectories, rewards,
and every kind of bad input ending its episode (never the run) with an error and a zero reward."""

import random

import pytest
from typer.testing import CliRunner

from lwm.agent.policy import ExpertPolicy, ReaderPolicy, expert_replies
from lwm.agent.search_suite import base_family, judged_by_page, pymodules, signals, syscalls
from lwm.backends import MockBackend
from lwm.cli import app
from lwm.data import TrajectoryStore
from lwm.envs.real.search import DEFAULT_SOURCES, corpus_index
from lwm.model_options import world_model
from lwm.rollout import task_env
from lwm.rollout.loop import run_episodes
from lwm.rollout.policies import ScriptedPolicy, call
from lwm.rollout.tasks import get_task, tasks
from lwm.testing.openai_server import ScriptedServer
from lwm.worldmodel import WorldModel
from tests.envs.real.conftest import needs_sandbox, needs_tmux

runner = CliRunner()
TASKS = {"search": "search/syscall-0004", "mcp": "mcp/memory-relation-0000", "terminal": "terminal/find-file-0000"}


def test_the_suites_are_large_split_by_task_and_listed():
    search = tasks("search")
    assert len(search) >= 300 and sum(t.split == "heldout" for t in search) >= 60
    train_rows = {r[t.check.columns[0]] for t in search if t.split == "train" and t.family != "signal"
                  for r in t.check.gold}
    heldout_rows = {r[t.check.columns[0]] for t in search if t.split == "heldout" and t.family != "signal"
                    for r in t.check.gold}
    assert not train_rows & heldout_rows  # held-out entities never appear in a training task
    assert len({t.id for t in tasks()}) == len(tasks())
    listed = runner.invoke(app, ["agent", "tasks", "list", "--domain", "search"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0 and "syscall-lookup" in listed.output and "128" in listed.output


def test_lookup_tasks_are_one_row_over_the_same_entity_split():
    lookups = tasks("search", families=["syscall-lookup", "pymodule-lookup"])
    assert len(lookups) == 300 and sum(t.split == "heldout" for t in lookups) == 60
    assert all(len(t.check.gold) == 1 for t in lookups)
    for split in ("train", "heldout"):
        lookup = {t.check.gold[0][t.check.columns[0]] for t in lookups if t.split == split}
        tables = {r[t.check.columns[0]] for t in tasks("search", split, ["syscall", "pymodule"]) for r in t.check.gold}
        other = {r[t.check.columns[0]] for t in tasks("search", "heldout" if split == "train" else "train",
                                                           ["syscall", "pymodule"]) for r in t.check.gold}
        assert not lookup & other and lookup & tables  # same entity pools as the table tasks of its split


def test_every_sampled_heldout_gold_table_is_reachable_in_the_real_search_engine():
    index = corpus_index(DEFAULT_SOURCES)
    found = {"syscall": syscalls(index), "pymodule": pymodules(index), "signal": signals(index)}
    heldout = [t for t in tasks("search", "heldout")]
    for task in random.Random(0).sample(heldout, 20):
        key = task.check.columns[0]
        for row in task.check.gold:
            value = found[base_family(task.family)][row[key]]
            cells = [value] if isinstance(value, str) else list(value)
            assert cells == [row[c] for c in task.check.columns[1:]], (task.id, row)


@needs_sandbox
def test_fictional_lookups_reward_what_the_simulator_showed_and_nothing_in_the_real_engine():
    fictional = tasks("search", families=["syscall-fictional", "pymodule-fictional"])
    assert len(fictional) == 300 and {t.split for t in fictional} == {"train"}
    index = corpus_index(DEFAULT_SOURCES)
    real = set(syscalls(index)) | set(pymodules(index))
    assert not {t.check.gold[0][t.check.columns[0]] for t in fictional} & real
    task = fictional[0]
    name = task.check.gold[0][task.check.columns[0]]
    right, wrong = ([call("web_search", query=f"{name} system call"),
                     call("final_answer", answer=f"| Call | Summary |\n|---|---|\n| {name} | {summary} |")]
                    for summary in ("pin pages of a fence", "close a file"))
    page = f"1. [{name}(2) — pin pages of a fence](https://man7.org/linux/man-pages/man2/{name}.2.html)"
    sim = WorldModel(MockBackend([f"<predicted_observation>{page}</predicted_observation>"]), cache=False)
    [good] = run_episodes([task], ScriptedPolicy(right), "sim", world_model=sim)
    [bad] = run_episodes([task], ScriptedPolicy(wrong), "sim", world_model=sim)
    [in_real] = run_episodes([task], ScriptedPolicy(right), "real")
    assert (good.reward, bad.reward, in_real.reward) == (1.0, 0.5, 0.0)  # no real page: nothing to agree with
    assert all(e.error is None for e in (good, bad, in_real))


def test_a_lookup_judged_by_its_page_rewards_what_the_simulator_showed_not_the_gold_row():
    """``reward: page`` (rl-lookup-sim-page.yaml): a simulated page that got the summary wrong no longer punishes a
    policy that read it; a page that titles nothing for the entity still rewards nothing beyond its name."""
    task = tasks("search", "train", ["syscall-lookup"])[0]
    judged = judged_by_page(task)
    name, summary = task.check.gold[0]["Call"], task.check.gold[0]["Summary"]
    assert (judged.check.kind, judged.check.gold, judged.id) == ("observed", [{"Call": name}], task.id)
    answers = {s: f"| Call | Summary |\n|---|---|\n| {name} | {s} |" for s in (summary, "pin pages of a fence")}
    wrong_page = f"1. [{name}(2) — pin pages of a fence](https://man7.org/x)"
    rewards = {s: [run_episodes([t], ScriptedPolicy([call("web_search", query=f"{name} system call"),
                                                     call("final_answer", answer=a)]), "sim",
                                world_model=WorldModel(MockBackend(
                                    [f"<predicted_observation>{wrong_page}</predicted_observation>"]),
                                    cache=False))[0].reward for t in (task, judged)]
               for s, a in answers.items()}
    assert rewards[summary][0] == 1.0 and rewards[summary][1] < 1.0  # gold: the truth; page: what it was shown
    assert rewards["pin pages of a fence"][1] == 1.0 and rewards["pin pages of a fence"][0] < 1.0
    multi = tasks("search", "train", ["syscall"])[0]
    assert judged_by_page(multi) is multi  # only one-row lookups have one page title to agree with


@needs_sandbox
def test_the_reader_copies_what_the_engine_shows_in_real_and_sim():
    """The reader's sim-vs-real rewards measure whether a simulated engine serves the rewarded answers."""
    chosen = [tasks("search", "heldout", [f])[0] for f in ("syscall-lookup", "pymodule-lookup")]
    real = run_episodes(chosen, ReaderPolicy(chosen), "real")
    assert [e.reward for e in real] == [1.0, 1.0] and all(e.error is None for e in real)
    task = chosen[0]
    name, summary = task.check.gold[0]["Call"], task.check.gold[0]["Summary"]
    pages = [f"1. [{name}(2) — {summary}](https://man7.org/x)", "1. [other(2) — something else](https://man7.org/y)"]
    sims = [run_episodes([task], ReaderPolicy([task]), "sim", world_model=WorldModel(
        MockBackend([f"<predicted_observation>{page}</predicted_observation>"]), cache=False))[0] for page in pages]
    assert [e.reward for e in sims] == [1.0, pytest.approx(2 / 3)]  # no title for it: summary left empty (recall 1/2)
    with pytest.raises(ValueError, match="signal"):
        ReaderPolicy(tasks("search", "train", ["signal"]))


@needs_sandbox
@pytest.mark.parametrize("family", ["syscall", "pymodule", "syscall-lookup", "pymodule-lookup"])
def test_the_experts_searches_show_every_gold_cell(tmp_path, family):
    """The expert's demonstrations teach reading the answer off the results page, so its queries must be the
    ones that find each row's page (a lookup family's expert once sent the signal(7) query for every task)."""
    task = tasks("search", "train", [family])[0]
    store = TrajectoryStore(tmp_path)
    run_episodes([task], ExpertPolicy(), "real", store=store)
    seen = " ".join(turn.observation.content for turn in next(iter(store)).turns)
    for row in task.check.gold:
        assert all(row[column] in seen for column in task.check.columns), (task.id, row)


@needs_sandbox
@needs_tmux
@pytest.mark.parametrize("domain", ["search", "mcp", "terminal"])
def test_a_scripted_agent_solves_a_task_in_the_real_environment_and_is_recorded(tmp_path, domain):
    task = get_task(TASKS[domain])
    store = TrajectoryStore(tmp_path)
    [episode] = run_episodes([task], ExpertPolicy(), "real", store=store)
    assert episode.error is None and episode.reward == 1.0
    [trajectory] = list(store)
    assert trajectory.provenance.source == "real" and trajectory.provenance.extra["task"] == task.id
    assert len(trajectory.turns) == len(expert_replies(task)) - 1 == episode.steps  # every action, not the answer
    assert trajectory.provenance.extra["reward"] == 1.0


@pytest.mark.parametrize("domain", ["search", "mcp", "terminal"])
def test_the_same_loop_runs_in_the_simulator(tmp_path, domain):
    task = get_task(TASKS[domain])
    check = " ".join(task.check.expect) or "x"
    backend = MockBackend(lambda m: f"<predicted_observation>ok {check}</predicted_observation>")
    store = TrajectoryStore(tmp_path)
    [episode] = run_episodes([task], ExpertPolicy(), "sim", world_model=WorldModel(backend, cache=False),
                             store=store)
    assert episode.error is None and episode.steps == len(expert_replies(task)) - 1
    assert episode.world_model_calls == episode.steps + (task.check.kind == "state")  # a simulated checker call
    assert episode.reward == 1.0  # search: answer-based; mcp/terminal: the simulated check saw what it expects
    [trajectory] = list(store)
    assert trajectory.provenance.source == "simulated" and len(trajectory.turns) == episode.steps


def test_a_policy_that_never_answers_scores_zero_and_a_bad_one_is_stopped():
    task = get_task("search/signal-0001")
    wm = WorldModel(MockBackend(), cache=False)
    [searching] = run_episodes([task], ScriptedPolicy([call("web_search", query="signals")]), "sim",
                               world_model=wm, max_steps=3)
    assert searching.answer is None and searching.reward == 0.0 and searching.steps == 3 and searching.error is None
    [garbage] = run_episodes([task], ScriptedPolicy(["I think I will look around."]), "sim", world_model=wm)
    assert garbage.error.startswith("no valid action in 3 replies") and garbage.reward == 0.0 and garbage.steps == 0


def test_a_world_model_that_times_out_ends_that_episode_only():
    task = get_task("search/signal-0001")
    with ScriptedServer(latency=2.0) as server:
        wm = WorldModel(f"openai:slow?base_url={server.base_url}&timeout=0.3&max_retries=0", cache=False)
        good = get_task("search/syscall-0004")
        episodes = run_episodes([task, good], ExpertPolicy(), "sim", world_model=wm)
    assert all(e.error and e.error.startswith("step failed: BackendError") and e.reward == 0.0 for e in episodes)


def test_a_checker_that_crashes_gives_zero_and_says_so(monkeypatch):
    task = get_task("search/syscall-0004")

    def broken(task, answer, shown, env):
        raise RuntimeError("checker bug")

    monkeypatch.setattr(task_env, "check", broken)
    [episode] = run_episodes([task], ExpertPolicy(), "sim", world_model=WorldModel(MockBackend(), cache=False))
    assert episode.reward == 0.0 and episode.error == "checker failed: RuntimeError: checker bug"


def test_eval_keeps_each_batch_resumes_and_refuses_other_settings(tmp_path):
    args = ["agent", "eval", "--family", "syscall-lookup", "--policy", "expert", "--batch", "2", "--out", str(tmp_path)]
    first = runner.invoke(app, [*args, "--limit", "3"], env={"COLUMNS": "200"})
    assert first.exit_code == 0, first.output
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 3
    again = runner.invoke(app, [*args, "--limit", "5"], env={"COLUMNS": "200"})
    assert again.exit_code == 0 and "resuming: 3 of 5" in again.output and "1.000" in again.output
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 5  # only the 2 new episodes ran
    other = runner.invoke(app, [*args, "--max-steps", "3"])
    assert other.exit_code == 2 and "max_steps: 8 -> 3" in other.output


def test_compare_pairs_two_evals_task_by_task(tmp_path):
    base = ["agent", "eval", "--family", "pymodule-lookup", "--limit", "4", "--max-steps", "2"]
    assert runner.invoke(app, [*base, "--policy", "expert", "--out", str(tmp_path / "expert")]).exit_code == 0
    idle = ScriptedPolicy([call("final_answer", answer="nothing found")])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("lwm.agent.evaluate.make_policy", lambda *a, **k: idle)
        assert runner.invoke(app, [*base, "--policy", "idle", "--out", str(tmp_path / "idle")]).exit_code == 0
    result = runner.invoke(app, ["agent", "compare", str(tmp_path / "expert"), str(tmp_path / "idle")],
                           env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if "idle" in x and "real" in x)
    assert "0/0/4" in line and "-1.000" in line and "0.000" in line  # lost every task, by the whole reward
    missing = runner.invoke(app, ["agent", "compare", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no results.jsonl" in missing.output


def test_the_simulator_writes_no_more_than_the_policy_reads():
    seen = []
    backend = MockBackend(lambda m: "<predicted_observation>page</predicted_observation>")
    original = backend.generate

    async def generate(messages, config):
        seen.append(config.max_tokens)
        return await original(messages, config)

    backend.generate = generate
    task = get_task(TASKS["search"])
    run_episodes([task], ExpertPolicy(), "sim", world_model=world_model(backend, max_tokens=300))
    assert seen and set(seen) == {300}


def test_unknown_task_and_bad_env_are_one_line_errors():
    result = runner.invoke(app, ["agent", "run", "--task", "search/nope-1"])
    assert result.exit_code == 2 and "unknown task 'search/nope-1'" in result.output
    result = runner.invoke(app, ["agent", "run", "--task", TASKS["search"], "--mode", "moon"])
    assert result.exit_code == 2 and "--mode must be sim or real" in result.output


def test_the_simulated_checker_call_reads_the_world_models_answer_after_the_recorded_episode(tmp_path):
    from lwm.rollout.loop import simulated_reward

    task = get_task("terminal/count-lines-0000")
    store = TrajectoryStore(tmp_path)
    run_episodes([task], ExpertPolicy(), "sim", world_model=WorldModel(MockBackend(), cache=False), store=store)
    [trajectory] = list(store)
    seen = []

    def answer(messages):
        seen.append(messages)
        return f"<predicted_observation>{task.check.expect[0]}</predicted_observation>"

    reward, observation = simulated_reward(task, trajectory, WorldModel(MockBackend(answer), cache=False))
    assert reward == 1.0 and observation == task.check.expect[0]
    assert "wc -l" in seen[-1][-3]["content"]  # the world model saw the episode before the checker's command


def test_an_environment_that_does_not_start_or_a_policy_that_fails_ends_its_episodes_only(monkeypatch):
    task, other = get_task("search/signal-0001"), get_task("search/syscall-0004")
    wm = WorldModel(MockBackend(), cache=False)
    real_make_env = task_env.make_env

    def make_env(t, env, world_model=None, render_mode=None):
        if t.id == task.id:
            raise OSError("no sandbox")
        return real_make_env(t, env, world_model, render_mode)

    monkeypatch.setattr(task_env, "make_env", make_env)
    broken, fine = run_episodes([task, other], ExpertPolicy(), "sim", world_model=wm)
    assert broken.error == "environment did not start: OSError: no sandbox" and broken.reward == 0.0
    assert fine.error is None and fine.reward == 1.0
    monkeypatch.setattr(task_env, "make_env", real_make_env)

    class Failing:
        name = "failing"

        def act(self, episodes):
            raise TimeoutError("policy server gone")

    [episode] = run_episodes([other], Failing(), "sim", world_model=wm)
    assert episode.error == "policy failed: TimeoutError: policy server gone" and episode.reward == 0.0
