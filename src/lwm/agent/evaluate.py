"""Evaluating a policy on a suite's tasks from Python: ``run_tasks`` runs them in batches (recorded, each batch's
rows handed on as it ends) and ``results_file`` is an eval folder's pinned, resumable results. ``lwm agent
run|eval|demos`` call these and print."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lwm.agent.loop import Episode, run_episodes
from lwm.agent.policy import make_policy
from lwm.agent.task_env import WORLD_MODEL_TOKENS, sim_world_model
from lwm.agent.tasks import Task
from lwm.backends import DEFAULT_SPEC
from lwm.data.jsonl import JsonlFile
from lwm.data.store import TrajectoryStore
from lwm.envs.control import ControlSpec
from lwm.runfolder import holds_rows, pin


class EvalRow(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    """One episode of ``lwm agent eval`` in OUT/results.jsonl."""

    task: str
    domain: str
    family: str
    env: str
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
        return cls(task=e.task.id, domain=e.task.domain, family=e.task.family, env=e.env, policy=policy,
                   reward=e.reward, answer=e.answer, error=e.error, steps=e.steps, policy_calls=e.policy_calls,
                   world_model_calls=e.world_model_calls, seconds=round(e.seconds, 3), trajectory=e.trajectory_id,
                   episode=e if keep_episode else None)


def run_tasks(chosen: Sequence[Task], env: str, policy_spec: str, world_model: str = DEFAULT_SPEC, *,
              max_steps: int = 8, out: Path | None = None, batch: int = 8, seed: int = 0,
              policy_options: dict | None = None, keep_episodes: bool = False,
              world_model_tokens: int = WORLD_MODEL_TOKENS, done: Callable[[list[EvalRow]], None] | None = None,
              control: Path | None = None, status: Callable[[str], Any] = lambda _: nullcontext()
              ) -> list[EvalRow]:
    """``chosen`` tasks run by a policy (a spec) in batches, recorded in ``out``; ``done`` gets each batch's rows
    as it finishes (so a long eval keeps its work); ``status(text)`` is a context manager around each batch.
    A bad spec, world model or control file raises ``ValueError`` (or ``OSError``) before any episode runs."""
    if env not in ("sim", "real"):
        raise ValueError(f"--env must be sim or real, not {env!r}")
    policy = make_policy(policy_spec, chosen, **(policy_options or {}))
    wm = sim_world_model(world_model, world_model_tokens) if env == "sim" else None
    spec = ControlSpec.load(control) if control else None
    store = TrajectoryStore(out) if out else None
    rows = []
    for start in range(0, len(chosen), batch):
        with status(f"episodes {start + 1}-{min(start + batch, len(chosen))} of {len(chosen)} ({env})..."):
            episodes = run_episodes(chosen[start: start + batch], policy, env, world_model=wm, max_steps=max_steps,
                                    store=store, seed=seed + start, control=spec)
        made = [EvalRow.of(e, policy.name, keep_episodes) for e in episodes]
        if done:
            done(made)
        rows += made
    return rows


def results_file(out: Path, settings: dict) -> JsonlFile[EvalRow]:
    """OUT/results.jsonl, its settings pinned in OUT/run.json: a rerun with other settings is refused
    (``SettingsChanged``), since its episodes would be mixed with these."""
    results = out / "results.jsonl"
    pin(out, "eval", settings, has_rows=holds_rows(results), way_out="use a new --out")
    return JsonlFile(results, EvalRow)
