"""Evaluating a policy on a suite's tasks from Python: ``run_tasks`` runs them in batches (recorded, each batch's
rows handed on as it ends), ``eval_tasks`` keeps them in an eval folder's pinned results and resumes from them,
and ``compare_runs`` pairs eval folders task by task. ``lwm agent run|eval|compare|demos`` call these and
print."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lwm.agent.policy import make_policy
from lwm.backends import DEFAULT_SPEC
from lwm.data.jsonl import JsonlFile
from lwm.data.store import MemoryStore, TrajectoryStore
from lwm.envs.control import ControlSpec
from lwm.model_options import world_model as get_world_model
from lwm.rollout.cluster import remote_map
from lwm.rollout.loop import Episode, run_episodes
from lwm.rollout.task_env import WORLD_MODEL_TOKENS
from lwm.rollout.tasks import Task
from lwm.runfolder import digest, holds_rows, pin, read_run
from lwm.stats import paired, standard_error
from lwm.types import Trajectory


class EvalRow(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    """One episode of ``lwm agent eval`` in OUT/results.jsonl."""

    task: str
    domain: str
    family: str
    mode: str
    policy: str
    reward: float
    answer: str | None = None
    error: str | None = None
    steps: int = 0
    policy_calls: int = 0
    world_model_calls: int = 0
    seconds: float = 0.0
    trajectory: str | None = None
    episode: Episode | None = Field(default=None, exclude=True)
    """The episode itself, in this process only (``demos`` turns it into SFT rows)."""

    @classmethod
    def of(cls, e: Episode, policy: str, keep_episode: bool = False) -> EvalRow:
        return cls(task=e.task.id, domain=e.task.domain, family=e.task.family, mode=e.mode, policy=policy,
                   reward=e.reward, answer=e.answer, error=e.error, steps=e.steps, policy_calls=e.policy_calls,
                   world_model_calls=e.world_model_calls, seconds=round(e.seconds, 3), trajectory=e.trajectory_id,
                   episode=e if keep_episode else None)


def run_tasks(chosen: Sequence[Task], mode: str, policy_spec: str, world_model: str = DEFAULT_SPEC, *,
              max_steps: int = 8, out: Path | None = None, batch: int = 8, seed: int = 0,
              policy_options: dict | None = None, keep_episodes: bool = False,
              world_model_tokens: int = WORLD_MODEL_TOKENS, done: Callable[[list[EvalRow]], None] | None = None,
              control: Path | None = None, status: Callable[[str], Any] = lambda _: nullcontext(),
              world_model_retrieve: Sequence[Path] = (), executor: str = "local",
              store: TrajectoryStore | None = None) -> list[EvalRow]:
    """``chosen`` tasks run by a policy (a spec) in batches, recorded in ``out`` (or ``store``); ``done`` gets each
    batch's rows as it finishes (so a long eval keeps its work); ``status(text)`` is a context manager around each
    batch. With ``executor="ray"`` each batch is a Ray task on the cluster (``lwm.rollout.cluster``), its rows and
    trajectories written here as it ends. A bad spec, world model or control file raises ``ValueError`` (or
    ``OSError``) before any episode runs."""
    if mode not in ("sim", "real"):
        raise ValueError(f"--mode must be sim or real, not {mode!r}")
    if executor not in ("local", "ray"):
        raise ValueError(f"--executor must be local or ray, not {executor!r}")
    policy = make_policy(policy_spec, chosen, **(policy_options or {}))
    store = store if store is not None else TrajectoryStore(out) if out else None
    batches = [Batch(list(chosen[start: start + batch]), mode, policy_spec, world_model, max_steps, seed + start,
                     policy_options or {}, world_model_tokens, control, tuple(world_model_retrieve))
               for start in range(0, len(chosen), batch)]
    if executor == "ray":
        return _run_on_cluster(batches, policy.name, store, done, status, sandboxed=mode == "real")
    wm = get_world_model(world_model, max_tokens=world_model_tokens,
                         retrieve=[Path(p) for p in world_model_retrieve] or None) if mode == "sim" else None
    spec = ControlSpec.load(control) if control else None
    rows = []
    for i, job in enumerate(batches):
        first = i * batch
        with status(f"episodes {first + 1}-{first + len(job.tasks)} of {len(chosen)} ({mode})..."):
            episodes = run_episodes(job.tasks, policy, mode, world_model=wm, max_steps=max_steps, store=store,
                                    seed=job.seed, control=spec)
        made = [EvalRow.of(e, policy.name, keep_episodes) for e in episodes]
        if done:
            done(made)
        rows += made
    return rows


@dataclass(frozen=True)
class Batch:
    """One batch of episodes as a Ray task gets it: everything needed to run it anywhere."""

    tasks: list[Task]
    mode: str
    policy_spec: str
    world_model: str
    max_steps: int
    seed: int
    policy_options: dict[str, Any]
    world_model_tokens: int
    control: Path | None
    world_model_retrieve: tuple[Path, ...]


def run_batch(job: Batch) -> tuple[list[EvalRow], list[Trajectory]]:
    """A batch run where its Ray task landed: its rows, and its trajectories kept in memory for the caller."""
    kept = MemoryStore()
    rows = run_tasks(job.tasks, job.mode, job.policy_spec, job.world_model, max_steps=job.max_steps,
                     batch=len(job.tasks), seed=job.seed, policy_options=job.policy_options,
                     world_model_tokens=job.world_model_tokens, control=job.control,
                     world_model_retrieve=job.world_model_retrieve, store=kept)
    return rows, kept.trajectories


def _run_on_cluster(batches: list[Batch], policy: str, store: TrajectoryStore | None,
                    done: Callable[[list[EvalRow]], None] | None, status: Callable[[str], Any],
                    sandboxed: bool) -> list[EvalRow]:
    """Batches as Ray tasks; rows and trajectories written here, once, as each batch ends; rows returned in task
    order. A batch that failed on every try gives its episodes an error row (a rerun of the eval runs them)."""
    by_batch: dict[int, list[EvalRow]] = {}
    index = {id(job): i for i, job in enumerate(batches)}
    total = sum(len(job.tasks) for job in batches)
    with status(f"{total} episodes in {len(batches)} batches on the Ray cluster..."):
        for job, outcome in remote_map(run_batch, batches, sandboxed=sandboxed):
            if isinstance(outcome, BaseException):
                rows = [EvalRow(task=t.id, domain=t.domain, family=t.family, mode=job.mode, policy=policy,
                                reward=0.0, error=f"{type(outcome).__name__}: {outcome}"[:500]) for t in job.tasks]
            else:
                rows, trajectories = outcome
                for trajectory in trajectories if store is not None else ():
                    store.append_once(trajectory)
            by_batch[index[id(job)]] = rows
            if done:
                done(rows)
    return [row for i in sorted(by_batch) for row in by_batch[i]]


def results_file(out: Path, settings: dict) -> JsonlFile[EvalRow]:
    """OUT/results.jsonl, its settings pinned in OUT/run.json: a rerun with other settings is refused
    (``SettingsChanged``), since its episodes would be mixed with these."""
    results = out / "results.jsonl"
    pin(out, "eval", settings, has_rows=holds_rows(results), way_out="use a new --out")
    return JsonlFile(results, EvalRow)


def eval_tasks(chosen: Sequence[Task], mode: str, policy_spec: str, world_model: str = DEFAULT_SPEC, *,
               max_steps: int = 8, out: Path | None = None, batch: int = 8, seed: int = 0, max_tokens: int = 160,
               temperature: float = 0.0, world_model_tokens: int = WORLD_MODEL_TOKENS, control: Path | None = None,
               status: Callable[[str], Any] = lambda _: nullcontext(), say: Callable[[str], Any] = lambda _: None,
               world_model_retrieve: Sequence[Path] = (), executor: str = "local") -> list[EvalRow]:
    """``run_tasks`` with its rows kept in ``out`` (OUT/results.jsonl, appended batch by batch): a rerun goes on
    from the tasks already there (``say`` is told how many) and refuses other settings (``SettingsChanged``)."""
    settings = {"mode": mode, "policy": policy_spec, "max_steps": max_steps, "max_tokens": max_tokens,
                "temperature": temperature, "seed": seed, **({"world_model": world_model,
                "world_model_tokens": world_model_tokens} if mode == "sim" else {}),
                "control": digest(control) if control else None,
                **({"world_model_retrieve": [digest(Path(p)) for p in world_model_retrieve]}
                   if mode == "sim" and world_model_retrieve else {})}
    results = results_file(out, settings) if out else None
    kept = {r.task: r for r in results.rows()} if results else {}
    todo = [t for t in chosen if t.id not in kept]
    if kept:
        say(f"resuming: {len(chosen) - len(todo)} of {len(chosen)} episodes already in {out}")
    made = iter(run_tasks(todo, mode, policy_spec, world_model, max_steps=max_steps, out=out, batch=batch, seed=seed,
                          policy_options={"max_tokens": max_tokens, "temperature": temperature, "seed": seed},
                          world_model_tokens=world_model_tokens, control=control, status=status,
                          done=(lambda rows: [results.append(r) for r in rows]) if results else None,
                          world_model_retrieve=world_model_retrieve, executor=executor)
                if todo else [])
    return [kept[t.id] if t.id in kept else next(made) for t in chosen]


@dataclass
class ComparedRun:
    """One run (eval folders of one policy) against the first: its own mean reward, and the paired difference on
    the episodes both ran."""

    run: str
    settings: dict[str, Any]
    tasks: int
    mean: float | None
    se: float
    pairs: int
    wins: int
    ties: int
    losses: int
    diff: float
    diff_se: float | None


COMPARED_SETTINGS = ("max_steps", "max_tokens", "temperature", "mode", "control")
"""Settings two evals must share to be compared like for like."""


def load_evals(folders: Sequence[Path]) -> tuple[dict[tuple[int, str], EvalRow], dict[str, Any]]:
    """One run's episodes keyed by (seed, task), from one eval folder or several (the same policy at other seeds)."""
    rows: dict[tuple[int, str], EvalRow] = {}
    settings: dict[str, Any] = {}
    for folder in folders:
        path = folder / "results.jsonl"
        if not path.is_file():
            raise FileNotFoundError(f"{folder} has no results.jsonl (an lwm agent eval --out folder)")
        settings = read_run(folder).get("eval") or {}
        seed = int(settings.get("seed", 0))
        if any(key[0] == seed for key in rows):
            raise ValueError(f"{folder} repeats seed {seed} of another folder of the same run")
        rows.update({(seed, r.task): r for r in JsonlFile(path, EvalRow).rows()})
    return rows, settings


def compare_runs(runs: Sequence[Path | Sequence[Path]]) -> tuple[list[ComparedRun], set[str]]:
    """Each run paired episode by episode with the first, and the settings in which any differs from the first
    (``COMPARED_SETTINGS``). A run is an eval folder, or several folders of one policy at different seeds (e.g.
    under control, each seed perturbs other calls): episodes pair by task and seed. Raises ``FileNotFoundError``
    for a folder without results, ``ValueError`` for one run's folders sharing a seed."""
    loaded = []
    for run in runs:
        folders = [run] if isinstance(run, Path) else list(run)
        loaded.append(("+".join(str(f) for f in folders), *load_evals(folders)))
    _, base, base_settings = loaded[0]
    compared = []
    for name, rows, settings in loaded:
        values = [r.reward for r in rows.values()]
        diff = paired([rows[k].reward - base[k].reward for k in rows if k in base])
        compared.append(ComparedRun(name, settings, len(rows), mean(values) if values else None,
                                    standard_error(values) or 0.0, diff["n"], diff["wins"], diff["ties"],
                                    diff["losses"], diff["mean"], diff["se"]))
    differ = {k for _, _, s in loaded[1:] for k in COMPARED_SETTINGS if s.get(k) != base_settings.get(k)}
    return compared, differ


@dataclass
class FamilyMean:
    """One line of an eval's summary: a family's (or ``all``'s) mean reward with its standard error."""

    domain: str
    family: str
    episodes: int
    mean: float
    se: float
    errors: int
    steps: float


def family_means(rows: Sequence[EvalRow]) -> list[FamilyMean]:
    """Mean reward per (domain, family), then over all rows."""
    groups: dict[tuple[str, str], list[EvalRow]] = {}
    for row in rows:
        groups.setdefault((row.domain, row.family), []).append(row)
    return [FamilyMean(d, f, len(items), mean(r.reward for r in items),
                       standard_error([r.reward for r in items]) or 0.0, sum(bool(r.error) for r in items),
                       mean(r.steps for r in items))
            for (d, f), items in [*sorted(groups.items()), (("all", ""), list(rows))] if items]
