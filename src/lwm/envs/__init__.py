"""Environments with Gymnasium's interface: the simulated one here, real ones per domain later."""

from lwm.envs.base import AnyText, TextEnv
from lwm.envs.sim import SimEnv

__all__ = ["AnyText", "SimEnv", "TextEnv"]
