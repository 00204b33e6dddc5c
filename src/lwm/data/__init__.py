"""Trajectory storage and conversions between lwm's data and other formats."""

from lwm.data.store import EpisodeRecorder, TrajectoryStore, read_trajectories, write_trajectories

__all__ = ["EpisodeRecorder", "TrajectoryStore", "read_trajectories", "write_trajectories"]
