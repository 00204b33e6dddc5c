"""Trajectory files: append-only JSONL, written step by step, safe to resume after a kill.

A collection folder holds ``trajectories.jsonl`` (one finished trajectory per line, appended when an
episode ends) and ``episodes/<id>.jsonl`` (the episode in progress: a header line, then one line per
step, flushed as it happens). A killed run loses at most the episodes in flight; on restart, finished
ids are skipped and unfinished episodes are run again from the start (a real environment's state
cannot be restored). Unreadable lines are reported with file and line, and skipped.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from lwm.types import Action, Observation, Trajectory, Turn

log = logging.getLogger(__name__)
TRAJECTORIES = "trajectories.jsonl"


def read_trajectories(path: str | Path, problems: list[str] | None = None) -> Iterator[Trajectory]:
    """Trajectories from a JSONL file (or a collection folder); bad lines go to ``problems``, not raised."""
    path = Path(path)
    if path.is_dir():
        path = path / TRAJECTORIES
    if not path.exists():
        return
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield Trajectory.model_validate_json(line)
            except ValueError as exc:
                message = f"{path}:{number}: skipped, not a trajectory: {str(exc).splitlines()[0]}"
                log.warning(message)
                if problems is not None:
                    problems.append(message)


def write_trajectories(path: str | Path, trajectories: list[Trajectory]) -> None:
    """Write a whole file at once (through a temporary file, so a kill never leaves half of it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for trajectory in trajectories:
            handle.write(trajectory.model_dump_json() + "\n")
    os.replace(tmp, path)


class TrajectoryStore:
    """A collection folder: finished trajectories plus the episodes being recorded."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        (self.root / "episodes").mkdir(parents=True, exist_ok=True)

    @property
    def path(self) -> Path:
        return self.root / TRAJECTORIES

    def finished_ids(self) -> set[str]:
        return {t.id for t in read_trajectories(self.path)}

    def __iter__(self) -> Iterator[Trajectory]:
        return read_trajectories(self.path)

    def recorder(self, trajectory: Trajectory) -> EpisodeRecorder:
        return EpisodeRecorder(self, trajectory)

    def finish(self, trajectory: Trajectory) -> None:
        line = trajectory.model_dump_json() + "\n"
        with self.path.open("a", encoding="utf-8") as handle:  # one write of one line: append is atomic enough
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        (self.root / "episodes" / f"{trajectory.id}.jsonl").unlink(missing_ok=True)


class EpisodeRecorder:
    """Writes one episode step by step to ``episodes/<id>.jsonl``, then hands it to the store."""

    def __init__(self, store: TrajectoryStore, trajectory: Trajectory):
        self.store = store
        self.trajectory = trajectory.model_copy(update={"turns": []})
        self.path = store.root / "episodes" / f"{trajectory.id}.jsonl"
        self._handle: IO[str] = self.path.open("w", encoding="utf-8")
        self._write({"header": json.loads(self.trajectory.model_dump_json())})

    def _write(self, record: dict) -> None:
        self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._handle.flush()

    def step(self, action: Action, observation: Observation) -> None:
        self.trajectory = self.trajectory.extended(action, observation)
        self._write({"turn": json.loads(Turn(action=action, observation=observation).model_dump_json())})

    def finish(self) -> Trajectory:
        self._handle.close()
        self.store.finish(self.trajectory)
        return self.trajectory
