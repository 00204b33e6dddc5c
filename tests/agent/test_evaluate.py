"""Evaluating from Python (lwm.agent.evaluate): an eval folder resumes, and two folders pair task by task."""

import pytest

from lwm.agent.evaluate import EvalRow, compare_runs, eval_tasks, family_means
from lwm.rollout.tasks import tasks
from lwm.runfolder import SettingsChanged


def test_an_eval_folder_resumes_and_pairs_with_another(tmp_path):
    chosen = tasks("search", "heldout", ["syscall-lookup"])[:3]
    said = []
    first = eval_tasks(chosen[:2], "sim", "expert", "mock", out=tmp_path / "a", max_steps=2)
    again = eval_tasks(chosen, "sim", "expert", "mock", out=tmp_path / "a", max_steps=2, say=said.append)
    assert [r.task for r in again] == [t.id for t in chosen] and again[:2] == first
    assert said == [f"resuming: 2 of 3 episodes already in {tmp_path / 'a'}"]
    with pytest.raises(SettingsChanged):
        eval_tasks(chosen, "sim", "expert", "mock", out=tmp_path / "a", max_steps=3)
    eval_tasks(chosen[:2], "sim", "reader", "mock", out=tmp_path / "b", max_steps=2)
    (base, other), differ = compare_runs([tmp_path / "a", tmp_path / "b"])
    assert (base.tasks, other.tasks, other.pairs, base.pairs) == (3, 2, 2, 3)
    assert other.wins + other.ties + other.losses == 2 and base.diff == 0.0 and differ == set()
    with pytest.raises(FileNotFoundError, match="no results.jsonl"):
        compare_runs([tmp_path / "nowhere"])


def test_a_run_over_several_seeds_pairs_by_task_and_seed(tmp_path):
    chosen = tasks("search", "heldout", ["syscall-lookup"])[:2]
    for policy in ("expert", "reader"):
        for seed in (0, 1):
            eval_tasks(chosen, "sim", policy, "mock", out=tmp_path / f"{policy}-{seed}", max_steps=2, seed=seed)
    runs = [[tmp_path / f"{policy}-0", tmp_path / f"{policy}-1"] for policy in ("expert", "reader")]
    (expert, reader), _ = compare_runs(runs)
    assert (expert.tasks, reader.tasks, reader.pairs) == (4, 4, 4)
    assert reader.run == f"{tmp_path / 'reader-0'}+{tmp_path / 'reader-1'}"
    with pytest.raises(ValueError, match="repeats seed 0"):
        compare_runs([[tmp_path / "expert-0", tmp_path / "reader-0"]])


def test_family_means_are_per_family_then_over_all_with_standard_errors():
    def row(family: str, reward: float, error: str | None = None) -> EvalRow:
        return EvalRow(task=f"search/{family}-0", domain="search", family=family, mode="real", policy="p",
                       reward=reward, error=error, steps=2)

    means = family_means([row("a", 1.0), row("a", 0.0), row("b", 0.5, "boom")])
    assert [(m.family, m.episodes, m.mean, m.errors) for m in means] == [("a", 2, 0.5, 0), ("b", 1, 0.5, 1),
                                                                         ("", 3, 0.5, 1)]
    assert means[0].se == 0.5 and means[-1].domain == "all" and means[1].se == 0.0
