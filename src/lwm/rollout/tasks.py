"""Agent tasks with checkers, kept as versioned suites (``suites/<domain>-v1.jsonl``) in the repo.

A task says what the agent must do (``instruction``), what the environment starts from (``context``,
``env_options``, ``files`` written into a terminal's home), and how success is checked (``check``):

- ``table``: the agent's final answer is a table, scored by WideSearch's item-level F1 against
  ``gold`` (``lwm.rollout.table``). The same in the simulator and in the real environment.
- ``state``: after the episode, ``action`` is run in the same environment (the real sandbox or server,
  or the world model playing it: a simulated checker call) and its observation must contain every
  ``expect`` string and none of ``absent``; the reward is the share of those conditions met.
- ``observed``: a table task about an entity that does not exist (only a simulator can serve it): the gold
  row is read, after the episode, from what the agent was shown — the first match of ``pattern`` (named
  groups = the other columns) in its observations — and scored like ``table``. It rewards consistency
  with the simulated world; in the real environment there is no such page and the reward is 0.

Train and held-out are split by task (never by turn); suites built from a corpus also keep the
entities of held-out tasks out of training tasks (``lwm agent tasks build``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from lwm.data.jsonl import JsonlFile
from lwm.types import Context, JSONValue

SUITES = Path(str(files("lwm.rollout") / "suites"))
DOMAINS = ("search", "mcp", "terminal")
Split = Literal["train", "heldout"]


class UnknownTaskError(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


class Check(BaseModel):
    kind: Literal["table", "state", "observed"]
    columns: list[str] = Field(default_factory=list)
    text_columns: list[str] = Field(default_factory=list)
    gold: list[dict[str, str]] = Field(default_factory=list)
    action: JSONValue = None
    expect: list[str] = Field(default_factory=list)
    absent: list[str] = Field(default_factory=list)
    pattern: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """``observed``: the regex whose named groups are the row's cells in an observation."""


class Task(BaseModel):
    id: str
    domain: str
    family: str
    split: Split
    instruction: str
    context: Context = Field(default_factory=Context)
    env_options: dict[str, Any] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict)
    """Files (path relative to the home folder -> text) a terminal task starts with."""
    check: Check


def suite_path(domain: str, version: str = "v1") -> Path:
    return SUITES / f"{domain}-{version}.jsonl"


@cache
def load_suite(domain: str, version: str = "v1") -> tuple[Task, ...]:
    path = suite_path(domain, version)
    if not path.exists():
        raise FileNotFoundError(f"no {domain} task suite at {path}; "
                                f"build it with lwm agent tasks build --domain {domain}")
    problems: list[str] = []
    tasks = tuple(JsonlFile(path, Task).rows(problems))
    if problems:
        raise ValueError(f"task suite {path} is damaged: {problems[0]}")
    return tasks


def tools_path(domain: str, version: str = "v1") -> Path:
    return SUITES / f"{domain}-tools-{version}.json"


@cache
def _suite_tools(domain: str) -> dict[str, Any]:
    path = tools_path(domain)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def task_context(task: Task) -> Context:
    """The context the environment starts from, with its tools filled in: the search engine's, or the ones
    the suite recorded for the task's MCP server preset (kept once per suite, not once per task)."""
    if task.context.tools:
        return task.context
    if task.domain == "search":
        from lwm.envs.real.search import TOOLS

        return task.context.model_copy(update={"tools": TOOLS})
    tools = _suite_tools(task.domain).get(task.env_options.get("preset", ""))
    return task.context.model_copy(update={"tools": tools}) if tools else task.context


def tasks(domain: str | None = None, split: Split | None = None, families: Sequence[str] = ()) -> list[Task]:
    """The suites' tasks, in suite order: of one domain, one split and some families (all when not given)."""
    chosen = [t for d in ([domain] if domain else DOMAINS) if suite_path(d).exists() for t in load_suite(d)]
    return [t for t in chosen if (split is None or t.split == split) and (not families or t.family in families)]


def get_task(task_id: str) -> Task:
    domain = task_id.split("/", 1)[0]
    for task in load_suite(domain) if domain in DOMAINS and suite_path(domain).exists() else ():
        if task.id == task_id:
            return task
    raise UnknownTaskError(f"unknown task {task_id!r}; ids look like 'search/syscall-0007' (lwm agent tasks list)")
