"""Search: web_search, web_extractor and dict_memory tool calls; results as numbered text."""

from __future__ import annotations

from typing import Any

from lwm.domains.base import ActionError, Domain, shell_tool_call, tool_call
from lwm.registry import register
from lwm.types import Action, Trajectory

TOOLS = {"web_search", "web_extractor", "dict_memory"}
MEMORY_OPERATIONS = {"add", "update", "retrieve", "retrieve_all", "remove", "remove_all"}


@register("domain")
class Search(Domain):
    name = "search"
    title = "Search"
    example_action = {"name": "web_search", "arguments": {"query": "python asyncio timeout"}}
    shell_prompt = "search> "

    def source(self, trajectory: Trajectory) -> str | None:
        """The document collections the engine searched."""
        sources = (trajectory.provenance.extra or {}).get("sources")
        return "search:" + "+".join(sorted(map(str, sources))) if sources else None

    def normalize(self, content: Any) -> dict[str, Any]:
        call = tool_call(content, self.name, TOOLS)
        args = call["arguments"]
        if call["name"] == "web_search" and not (args.get("query") or args.get("queries")):
            raise ActionError("web_search needs 'query' (a string) or 'queries' (a list of strings)")
        if call["name"] == "web_extractor" and not isinstance(args.get("url"), str):
            raise ActionError("web_extractor needs 'url' (a string)")
        if call["name"] == "dict_memory" and args.get("operation") not in MEMORY_OPERATIONS:
            raise ActionError(f"dict_memory needs 'operation', one of {', '.join(sorted(MEMORY_OPERATIONS))}")
        return call

    def from_shell(self, line: str) -> Action:
        """``search words`` runs web_search; ``open URL`` runs web_extractor; JSON or ``tool {...}`` as is."""
        stripped = line.strip()
        if stripped.startswith("open "):
            return self.action({"name": "web_extractor", "arguments": {"url": stripped[5:].strip()}})
        head = stripped.split(" ", 1)[0]
        if stripped.startswith("{") or head in TOOLS:
            return self.action(shell_tool_call(stripped, self.name))
        return self.action({"name": "web_search", "arguments": {"query": stripped}})
