"""Recording as a Gymnasium wrapper: any lwm environment (real or simulated) in, trajectories out.

Every ``TextEnv`` keeps its episode's history (a simulator needs it to predict the next step); this
wrapper is what persists it, reading that history rather than copying it. With ``save``, each accepted step
rewrites the episode's JSON file at once, so a crash loses nothing; when the episode terminates or is
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
    """Records the wrapped environment's episode. It keeps no copy of the history: ``trajectory`` is the
    environment's own, under the recorder's id and with its provenance added (fixed once the episode is
    finished, so a later reset leaves a stored episode as it was)."""

    def __init__(self, env: gym.Env, store: TrajectoryStore | None = None, *, save: str | Path | None = None,
                 trajectory_id: str | None = None, provenance: dict[str, Any] | None = None):
        super().__init__(env)
        self.store = store
        self.save = Path(save) if save else None
        self.trajectory_id = trajectory_id
        self.provenance = provenance or {}
        self.stored = False
        self._extra: dict[str, Any] | None = None
        """What this episode's provenance gets on top of the environment's (None before a reset)."""
        self._finished: Trajectory | None = None

    def _history(self) -> Trajectory:
        return self.env.unwrapped.trajectory  # the TextEnv contract

    @property
    def trajectory(self) -> Trajectory | None:
        """The episode so far (None before a reset), or as it was finished."""
        if self._finished is not None or self._extra is None:
            return self._finished
        base = self._history()
        return base.model_copy(update={"id": self.trajectory_id or base.id, "provenance": base.provenance.model_copy(
            update={"extra": {**base.provenance.extra, **self._extra}})})

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self._extra = {**self.provenance, "initial_observation": obs}
        if seed is not None and "seed" not in self._history().provenance.extra:
            self._extra.setdefault("seed", seed)
        self._finished, self.stored = None, False
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self._extra is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        turns = len(self._history().turns)
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.save and len(self._history().turns) > turns:  # an accepted action (an invalid one adds no turn)
            trajectory = self.trajectory
            assert trajectory is not None
            trajectory.save(self.save)
        if terminated or truncated:
            self.finish()
        return obs, reward, terminated, truncated, info

    def finish(self, extra: dict[str, Any] | None = None) -> Trajectory:
        """End the episode here: store it (once), with ``extra`` added to its provenance (a task's reward and
        answer). Called by ``step`` when the episode ends."""
        trajectory = self.trajectory
        if trajectory is None:
            raise gym.error.ResetNeeded("no episode to finish")
        if extra:
            provenance = trajectory.provenance
            trajectory = trajectory.model_copy(update={"provenance": provenance.model_copy(
                update={"extra": {**provenance.extra, **extra}})})
        self._finished = trajectory
        if self.store is not None and not self.stored:
            self.store.append(trajectory)
            self.stored = True
        return trajectory
