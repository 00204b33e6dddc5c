"""Environments with Gymnasium's interface: the simulated one here, real ones under ``real/``."""

from lwm.envs.base import AnyText, TextEnv
from lwm.envs.record import RecordTrajectory
from lwm.envs.sim import SimEnv

__all__ = ["AnyText", "RecordTrajectory", "SimEnv", "TextEnv"]
