"""Trajectory files: one finished trajectory per line of ``trajectories.jsonl``, appended as each
episode ends, so a killed collection resumes by skipping the ids already there.

A collection folder holds that one file; an episode is recorded by ``lwm.envs.RecordTrajectory``
(a Gymnasium wrapper over any environment) and lands here when it ends. Unreadable lines are
reported with file and line, and skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from lwm.data.jsonl import JsonlFile
from lwm.types import Trajectory

TRAJECTORIES = "trajectories.jsonl"


def trajectory_file(path: str | Path) -> JsonlFile[Trajectory]:
    """The trajectory JSONL at ``path`` (a file, or a collection folder's ``trajectories.jsonl``)."""
    path = Path(path)
    return JsonlFile(path / TRAJECTORIES if path.is_dir() else path, Trajectory)


def read_trajectories(path: str | Path, problems: list[str] | None = None) -> Iterator[Trajectory]:
    """Trajectories from a JSONL file (or a collection folder); bad lines go to ``problems``, not raised."""
    return trajectory_file(path).rows(problems)


def write_trajectories(path: str | Path, trajectories: Iterable[Trajectory]) -> None:
    """Write a whole file at once (through a temporary file, so a kill never leaves half of it)."""
    trajectory_file(path).write_all(trajectories)


class TrajectoryStore:
    """A collection folder: the trajectories finished so far."""

    _ids: set[str] | None = None
    """The ids stored, read once by ``append_once``."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.file = JsonlFile(self.root / TRAJECTORIES, Trajectory, sync=True)

    @property
    def path(self) -> Path:
        return self.file.path

    def finished_ids(self) -> set[str]:
        return self.file.ids()

    def __iter__(self) -> Iterator[Trajectory]:
        return iter(self.file)

    def append(self, trajectory: Trajectory) -> None:
        self.file.append(trajectory)

    def append_once(self, trajectory: Trajectory) -> bool:
        """Append unless a trajectory of that id is stored already (a retried Ray task's); whether it was."""
        if self._ids is None:
            self._ids = self.finished_ids()
        if trajectory.id in self._ids:
            return False
        self.append(trajectory)
        self._ids.add(trajectory.id)
        return True

    def close(self) -> None:
        self.file.close()


class MemoryStore(TrajectoryStore):
    """A store that keeps its trajectories in memory: for an episode whose trajectory is handed on rather than
    written where it ran (a Ray task's, which its caller writes once into the collection)."""

    def __init__(self) -> None:  # no folder: nothing is written
        self.trajectories: list[Trajectory] = []

    @property
    def path(self) -> Path:
        raise AttributeError("a MemoryStore has no file")

    def finished_ids(self) -> set[str]:
        return {t.id for t in self.trajectories}

    def __iter__(self) -> Iterator[Trajectory]:
        return iter(self.trajectories)

    def append(self, trajectory: Trajectory) -> None:
        self.trajectories.append(trajectory)

    def close(self) -> None:
        pass
