"""Trajectory storage and conversions between lwm's data and other formats."""

from lwm.data.jsonl import JsonlFile
from lwm.data.store import TrajectoryStore, read_trajectories, write_trajectories

__all__ = ["JsonlFile", "TrajectoryStore", "read_trajectories", "write_trajectories"]
