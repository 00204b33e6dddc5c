"""Real environments, one module per domain (sandboxed where they run programs: terminal, swe, mcp, web, os)."""

from lwm.envs.real.android import AndroidEnv
from lwm.envs.real.mcp import MCPEnv, MCPServer
from lwm.envs.real.os import OSEnv
from lwm.envs.real.sandbox import Limits, Sandbox, SandboxUnavailable
from lwm.envs.real.search import SearchEnv
from lwm.envs.real.swe import SWEEnv
from lwm.envs.real.terminal import TerminalEnv
from lwm.envs.real.web import WebEnv

__all__ = ["AndroidEnv", "Limits", "MCPEnv", "MCPServer", "OSEnv", "SWEEnv", "Sandbox", "SandboxUnavailable",
           "SearchEnv", "TerminalEnv", "WebEnv"]
