"""(Re)building a task suite from its sources: search from the corpus (every gold row checked against the real
search engine), mcp and terminal from their templates (mcp asks the real servers for their tools)."""

from __future__ import annotations

import json
from pathlib import Path

from lwm.data.jsonl import JsonlFile
from lwm.rollout.tasks import DOMAINS, Task, suite_path, tools_path


def build_suite(domain: str, seed: int = 0, out: Path | None = None) -> tuple[Path, list[Task]]:
    """Build ``domain``'s suite with ``seed`` and write it to ``out`` (default: the suite lwm ships), its tools
    file beside it; the path written and the tasks."""
    if domain not in DOMAINS:
        raise ValueError(f"no task suite for {domain!r}; suites: {', '.join(DOMAINS)}")
    if domain == "search":
        from lwm.agent.search_suite import build

        built, tools = build(seed), None
    else:
        from lwm.agent.state_suites import build as build_state

        built, tools = build_state(domain, seed)
    path = out or suite_path(domain)
    if tools:
        tools_file = path.parent / tools_path(domain).name
        tools_file.write_text(json.dumps(tools, indent=1, ensure_ascii=False), encoding="utf-8")
    JsonlFile(path, Task).write_all(built)
    return path, built
