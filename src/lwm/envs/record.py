"""Recording as a Gymnasium wrapper: any lwm environment (real or simulated) in, trajectories out.

Every ``TextEnv`` keeps its episode's history (a simulator needs it to predict the next step); this
wrapper is what persists it. Each accepted step extends the recorded trajectory (and, with ``save``,
rewrites that JSON file at once, so a crash loses nothing); when the episode terminates or is
truncated (e.g. by ``TimeLimit``), the trajectory is appended to ``store``. An episode abandoned by an
exception or a ``close()`` before its end is not stored: a half-run real episode cannot be resumed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym

from lwm.data.store import TrajectoryStore
from lwm.types import Trajectory


class RecordTrajectory(gym.Wrapper):
    def __init__(self, env: gym.Env, store: TrajectoryStore | None = None, *, save: str | Path | None = None,
                 trajectory_id: str | None = None, provenance: dict[str, Any] | None = None):
        super().__init__(env)
        self.store = store
        self.save = Path(save) if save else None
        self.trajectory_id = trajectory_id
        self.provenance = provenance or {}
        self.trajectory: Trajectory | None = None
        self.stored = False

    def _history(self) -> Trajectory:
        return self.env.unwrapped.trajectory  # the TextEnv contract

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        base = self._history()
        extra = {**base.provenance.extra, **self.provenance, "initial_observation": obs}
        if seed is not None:
            extra.setdefault("seed", seed)
        self.trajectory = base.model_copy(update={
            "id": self.trajectory_id or base.id, "turns": list(base.turns),
            "provenance": base.provenance.model_copy(update={"extra": extra})})
        self.stored = False
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self.trajectory is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        obs, reward, terminated, truncated, info = self.env.step(action)
        turns = self._history().turns
        if len(turns) > len(self.trajectory.turns):  # an accepted action (an invalid one adds no turn)
            turn = turns[-1]
            self.trajectory = self.trajectory.extended(turn.action, turn.observation)
            if self.save:
                self.trajectory.save(self.save)
        if terminated or truncated:
            self.finish()
        return obs, reward, terminated, truncated, info

    def finish(self, extra: dict[str, Any] | None = None) -> Trajectory:
        """End the episode here: store it (once), with ``extra`` added to its provenance (a task's reward and
        answer). Called by ``step`` when the episode ends."""
        if self.trajectory is None:
            raise gym.error.ResetNeeded("no episode to finish")
        if extra:
            provenance = self.trajectory.provenance
            self.trajectory = self.trajectory.model_copy(update={"provenance": provenance.model_copy(
                update={"extra": {**provenance.extra, **extra}})})
        if self.store is not None and not self.stored:
            self.store.append(self.trajectory)
            self.stored = True
        return self.trajectory
