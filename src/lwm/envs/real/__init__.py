"""Real environments, one module per domain, each run in its own sandbox."""

from lwm.envs.real.sandbox import Sandbox, SandboxUnavailable
from lwm.envs.real.swe import SWEEnv
from lwm.envs.real.terminal import TerminalEnv

__all__ = ["SWEEnv", "Sandbox", "SandboxUnavailable", "TerminalEnv"]
