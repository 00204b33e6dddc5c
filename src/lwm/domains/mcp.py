"""MCP: JSON tool calls against the tool list of a server; the observation is the call's result."""

from __future__ import annotations

from typing import Any

from lwm.domains.base import Domain, shell_tool_call, tool_call
from lwm.registry import register
from lwm.types import Action


@register("domain")
class MCP(Domain):
    name = "mcp"
    title = "MCP"
    example_action = {"name": "read_file", "arguments": {"path": "/data/notes.txt"}}
    shell_prompt = "mcp> "

    def normalize(self, content: Any) -> dict[str, Any]:
        return tool_call(content, self.name)

    def from_shell(self, line: str) -> Action:
        return self.action(shell_tool_call(line, self.name))
