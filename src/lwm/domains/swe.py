"""SWE: JSON tool calls (shell, read/write/edit files, search) in a real repository."""

from __future__ import annotations

from typing import Any

from lwm.domains.base import Domain, shell_tool_call, tool_call
from lwm.registry import register
from lwm.types import Action


@register("domain")
class SWE(Domain):
    name = "swe"
    title = "SWE"
    example_action = {"name": "bash", "arguments": {"command": "pytest -q tests/test_core.py"}}
    shell_prompt = "swe> "

    def normalize(self, content: Any) -> dict[str, Any]:
        return tool_call(content, self.name)

    def from_shell(self, line: str) -> Action:
        """A typed line is a tool call, or a shell command for the ``bash`` tool when it is not one."""
        head = line.strip().split(" ", 1)[0]
        if line.strip().startswith("{") or head in {"bash", "read_file", "write_file", "str_replace",
                                                     "list_dir", "search"}:
            return self.action(shell_tool_call(line, self.name))
        return self.action({"name": "bash", "arguments": {"command": line}})
