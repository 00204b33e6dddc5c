"""A Sim RL experiment's results, kept where a new checkout finds them (issue 45).

Each arm (``warm`` start, RL in the ``real`` environment, RL in the simulator: ``sim``, ``sim-retrieved`` where the
simulator retrieves real transitions at each step, under a control spec: ``sim-control``, and rewarded by what the
simulated page said: ``sim-page``) is evaluated in
the REAL environment with ``lwm agent eval``; its episodes go into ``results/simrl-<name>/episodes.jsonl``
(arm, task, seed, reward, steps), with the eval settings and the commit that made them in ``config.json`` beside
it. The docs table is computed from that file (``arm_table``, ``lwm
agent experiment table``): each arm's mean reward, and its difference from the warm start paired by task and
seed, with standard errors; and how often an arm's own samples of one task disagree across seeds (the spread
GRPO's groups need to have a gradient at all). An arm may be evaluated greedily and sampled (``temperature`` 1,
as GRPO samples it, where RL's change shows first); each temperature is its own table, paired with the warm
start's evaluation at the same temperature.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Literal

from pydantic import BaseModel

from lwm.agent.evaluate import load_evals
from lwm.data.jsonl import JsonlFile
from lwm.stats import paired, standard_error

Arm = Literal["warm", "real", "sim", "sim-retrieved", "sim-control", "sim-page"]
ARMS: tuple[str, ...] = ("warm", "real", "sim", "sim-retrieved", "sim-control", "sim-page")
EPISODES = "episodes.jsonl"
CONFIG = "config.json"


class ArmEpisode(BaseModel):
    """One real-environment evaluation episode of one arm."""

    arm: Arm
    task: str
    seed: int
    reward: float
    steps: int
    temperature: float = 0.0
    """The policy's sampling temperature in this evaluation (0: greedy)."""

    @property
    def key(self) -> str:
        return f"{self.arm}|{self.temperature:g}|{self.seed}|{self.task}"


def _setting_key(seed: int, temperature: float) -> str:
    """config.json's key for one evaluation: the seed, and the temperature where it is sampled."""
    return str(seed) if not temperature else f"{seed}@t{temperature:g}"


def _commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                              cwd=Path(__file__).parent).stdout.strip() or None
    except OSError:
        return None


def add_arm(results: Path, arm: str, evals: Sequence[Path], note: str | None = None) -> int:
    """Add the episodes of ``evals`` (``lwm agent eval --out`` folders, one per seed) to ``results`` as ``arm``
    (an earlier row of the same arm, seed and task is replaced); their settings and the commit that made them,
    by seed, and ``note`` go into ``config.json``. Returns the number of episodes added."""
    if arm not in ARMS:
        raise ValueError(f"arm {arm!r}? one of {', '.join(ARMS)}")
    rows: list[ArmEpisode] = []
    settings = {}
    for folder in evals:
        episodes, run = load_evals([Path(folder)])  # the eval loader compare_runs uses
        if run.get("mode") != "real":
            raise ValueError(f"{folder} was evaluated in mode {run.get('mode')!r}: every arm is evaluated in the "
                             "real environment")
        temperature = float(run.get("temperature") or 0.0)
        settings[_setting_key(int(run.get("seed", 0)), temperature)] = run
        rows += [ArmEpisode(arm=arm, task=task, seed=seed, reward=r.reward, steps=r.steps,  # type: ignore[arg-type]
                            temperature=temperature) for (seed, task), r in episodes.items()]
    results.mkdir(parents=True, exist_ok=True)
    store = JsonlFile(results / EPISODES, ArmEpisode)
    kept = {e.key: e for e in store.rows()} if (results / EPISODES).exists() else {}
    kept.update({e.key: e for e in rows})
    store.write_all(sorted(kept.values(), key=lambda e: (ARMS.index(e.arm), e.temperature, e.seed, e.task)))
    config_path = results / CONFIG
    config = json.loads(config_path.read_text()) if config_path.exists() else {}
    earlier = config.get(arm, {})
    before, commits = earlier.get("evals", {}), earlier.get("commits", {})
    head = _commit()  # an evaluation added again unchanged (a rerun script resuming it) keeps the commit it had
    made = {key: commits[key] if before.get(key) == run and key in commits else head for key, run in settings.items()}
    config[arm] = {"evals": {**before, **settings}, "commits": {**commits, **made}, **({"note": note} if note else {})}
    config_path.write_text(json.dumps(config, indent=2) + "\n")
    return len(rows)


@dataclass
class ArmSummary:
    arm: str
    episodes: int
    seeds: int
    mean: float
    se: float
    pairs: int
    wins: int
    ties: int
    losses: int
    diff: float | None
    diff_se: float | None
    diff_se_by_task: float | None
    """The difference's s.e. with each task's seeds averaged first: the seeds share the same tasks, so this one
    does not count a task drawn again at another seed as new evidence."""
    spread: float | None
    """Share of tasks whose rewards differ across this arm's seeds (None with one seed)."""


def arm_table(results: Path, temperature: float = 0.0, seeds: Collection[int] = ()) -> list[ArmSummary]:
    """Each arm of ``results``/episodes.jsonl evaluated at ``temperature`` (at ``seeds`` only, where given: a
    confirmation at new seeds is read apart from the seeds an experiment was planned with): mean reward ± s.e., and
    minus the warm start at the same temperature paired by task and seed (by task alone when the warm start was
    evaluated greedily at one seed: its answers are the same at every seed; a sampled one is not)."""
    episodes = [e for e in JsonlFile(results / EPISODES, ArmEpisode).rows() if e.temperature == temperature]
    warm_seeds = {e.seed for e in episodes if e.arm == "warm"}
    once = not temperature and len(warm_seeds) == 1  # one greedy evaluation stands for the warm start at every seed
    if seeds:  # ... so it is kept whatever its seed
        episodes = [e for e in episodes if e.seed in seeds or (once and e.arm == "warm")]
    by_arm: dict[str, dict[tuple[int, str], ArmEpisode]] = {}
    for e in episodes:
        by_arm.setdefault(e.arm, {})[(e.seed, e.task)] = e
    warm = by_arm.get("warm", {})
    if once:
        (only,) = warm_seeds
        warm = {(seed, task): warm[(only, task)] for arm in by_arm.values() for seed, task in arm
                if (only, task) in warm}
    out = []
    for arm in [a for a in ARMS if a in by_arm]:
        rows = by_arm[arm]
        values = [e.reward for e in rows.values()]
        diffs = {k: rows[k].reward - warm[k].reward for k in rows if k in warm} if arm != "warm" else {}
        diff = paired(list(diffs.values())) if diffs else None
        seeds = {seed for seed, _ in rows}
        se_by_task = standard_error([mean(d) for d in _by_task(diffs).values()])
        spread = _varied(_by_task({k: e.reward for k, e in rows.items()}))[0] if len(seeds) > 1 else None
        out.append(ArmSummary(arm, len(rows), len(seeds), mean(values), standard_error(values) or 0.0,
                              diff["n"] if diff else 0, diff["wins"] if diff else 0, diff["ties"] if diff else 0,
                              diff["losses"] if diff else 0, diff["mean"] if diff else None,
                              diff["se"] if diff else None, se_by_task, spread))
    return out


@dataclass
class Spread:
    """How a sampled policy's episodes of one task differ across seeds: what a GRPO group of that size sees."""

    tasks: int
    seeds: int
    mean: float
    varied: float
    """Share of tasks whose rewards are not all equal across the seeds (a group with a gradient)."""
    within_sd: float
    """Mean over tasks of the rewards' standard deviation across seeds."""


def sampling_spread(evals: Sequence[Path]) -> Spread:
    """The spread of ``evals`` (one policy, sampled, one eval folder per seed), task by task."""
    episodes, _ = load_evals([Path(folder) for folder in evals])  # refuses two folders of one seed
    if not episodes:
        raise ValueError("no episodes in these eval folders")
    by_task = _by_task({k: r.reward for k, r in episodes.items()})
    varied, within = _varied(by_task)
    return Spread(len(by_task), len(evals), mean(r.reward for r in episodes.values()), varied, within)


def _by_task(values: dict[tuple[int, str], float]) -> dict[str, list[float]]:
    """Values keyed by (seed, task), gathered by task: a reward or a paired difference at each seed."""
    by_task: dict[str, list[float]] = {}
    for (_, task), value in values.items():
        by_task.setdefault(task, []).append(value)
    return by_task


def _varied(by_task: dict[str, list[float]]) -> tuple[float, float]:
    """(share of tasks whose rewards differ across seeds, mean over tasks of their standard deviation)."""
    from statistics import pstdev

    return (sum(len(set(r)) > 1 for r in by_task.values()) / len(by_task),
            mean(pstdev(r) for r in by_task.values()))


@dataclass
class RewardSources:
    """One training run's recorded lookup rollouts, each scored two ways from the pages it was shown: against
    the real gold row (what a ``reward: gold`` arm pays) and against the page (what ``reward: page`` pays)."""

    run: str
    rollouts: int
    gold: float
    page: float
    same: int
    page_higher: int
    """Rollouts the gold check paid less than the page check: read the page right, and the page was wrong."""
    gold_higher: int


def reward_sources(run: Path) -> RewardSources:
    """How often ``run``'s (an ``lwm agent train`` output folder) two possible rewards disagree, rollout by
    rollout, on its one-row lookups: in a simulator that gets facts wrong, the gold reward punishes reading."""
    from lwm.agent.search_suite import judged_by_page
    from lwm.data import read_trajectories
    from lwm.rollout.checks import check
    from lwm.rollout.loop import observation_view
    from lwm.rollout.tasks import get_task

    pairs = []
    for trajectory in read_trajectories(run / "rollouts"):
        extra = trajectory.provenance.extra
        task = get_task(str(extra["task"]))
        page = judged_by_page(task)
        if page is task:
            continue  # not a one-row lookup (a made-up entity's is already page-checked): no gold row to compare
        shown = [observation_view(task.domain, turn.observation.content) for turn in trajectory.turns]  # as the loop
        answer = extra.get("answer")
        pairs.append((check(task, answer, shown, None)[0], check(page, answer, shown, None)[0]))  # type: ignore[arg-type]
    if not pairs:
        raise ValueError(f"no recorded one-row lookup rollouts in {run / 'rollouts'}")
    return RewardSources(str(run), len(pairs), mean(g for g, _ in pairs), mean(p for _, p in pairs),
                         sum(abs(g - p) < 1e-9 for g, p in pairs), sum(p > g + 1e-9 for g, p in pairs),
                         sum(g > p + 1e-9 for g, p in pairs))
