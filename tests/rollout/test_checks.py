"""The one checker (lwm.rollout.checks): final answers, observed cells, and the three kinds of check."""

from lwm.backends import MockBackend
from lwm.rollout.checks import check, final_answer, observed_cells
from lwm.rollout.task_env import make_env
from lwm.rollout.tasks import get_task
from lwm.worldmodel import WorldModel


def test_a_final_answer_is_read_from_text_or_a_parsed_call_and_nothing_else_is_one():
    assert final_answer('{"name": "final_answer", "arguments": {"answer": "42"}}') == "42"
    assert final_answer({"name": "final_answer", "arguments": {"answer": ["a", 1]}}) == '["a", 1]'
    assert final_answer('{"name": "read_file", "arguments": {}}') is None
    assert final_answer("not json") is None


def test_observed_cells_come_from_the_first_observation_that_matches():
    shown = ["nothing here", "open(2) - open a file", "open(2) - something else"]
    assert observed_cells(r"open\(2\) - (?P<summary>.+)", shown) == {"summary": "open a file"}
    assert observed_cells(r"close\(2\)", shown) is None


def test_a_table_check_scores_the_answer_against_the_gold_rows():
    task = get_task("search/syscall-0004")
    assert check(task, "no table", [], env=None)[0] == 0.0


def test_a_state_check_reads_the_state_after_the_episode_and_leaves_no_turn_behind():
    task = get_task("terminal/count-lines-0000")
    predicted = WorldModel(MockBackend(lambda m: f"<predicted_observation>{task.check.expect[0]}"
                                                 "</predicted_observation>"), cache=False)
    env = make_env(task, "sim", predicted)
    env.reset(seed=0)
    before = env.trajectory
    reward, seen = check(task, "done", [], env)
    assert reward == 1.0 and task.check.expect[0] in seen
    assert env.trajectory is before  # the check's own step is not part of the episode
