"""How far the simulator's reward can be trusted: on the same real episodes, the state check as the real
environment answers it and as a world model predicts it (``lwm agent agreement``). Each task is run in the
real environment by the expert (solves it) and by a policy that answers at once (does nothing); the world
model then predicts the checker's output after each recorded episode."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from lwm.agent.policy import ExpertPolicy
from lwm.data.store import TrajectoryStore
from lwm.rollout.loop import run_episodes, simulated_reward
from lwm.rollout.policies import ScriptedPolicy, call
from lwm.rollout.tasks import Task
from lwm.worldmodel import WorldModel


class AgreementRow(BaseModel):
    """One real episode: its real reward, the simulated one, and whether they agree (both >= 0.5 or both < 0.5)."""

    task: str
    policy: str
    real: float
    sim: float
    agree: bool
    sim_observation: str
    real_observation: str


def agreement(chosen: Sequence[Task], world_model: WorldModel, out: Path | None = None,
              status: Callable[[str], Any] = lambda _: nullcontext()) -> list[AgreementRow]:
    """The real and simulated checks of ``chosen`` (state-checked tasks) after the expert's and an idle policy's
    real episodes, recorded under ``out`` (a temporary folder without it); ``status(text)`` wraps each stage."""
    if any(t.check.kind != "state" for t in chosen):
        raise ValueError("agreement compares state checks: give state-checked tasks (mcp, terminal)")
    root = out or Path(tempfile.mkdtemp(prefix="lwm-agreement-"))
    rows = []
    for policy in (ExpertPolicy(), ScriptedPolicy([call("final_answer", answer="done")], name="idle")):
        store = TrajectoryStore(root / policy.name)
        with status(f"{policy.name}: {len(chosen)} real episodes..."):
            episodes = run_episodes(chosen, policy, "real", store=store)
        recorded = {t.id: t for t in store}
        for episode in episodes:
            if episode.error or episode.task is None:
                continue
            with status(f"simulated check of {episode.task.id} ({policy.name})..."):
                try:
                    sim, seen = simulated_reward(episode.task, recorded[episode.trajectory_id], world_model)
                except Exception as exc:  # noqa: BLE001 - a failed prediction is a disagreement, recorded
                    sim, seen = float("nan"), f"error: {exc}"
            rows.append(AgreementRow(task=episode.task.id, policy=policy.name, real=episode.reward, sim=sim,
                                     agree=(sim >= 0.5) == (episode.reward >= 0.5), sim_observation=seen[-300:],
                                     real_observation=(episode.check_observation or "")[-300:]))
    return rows
