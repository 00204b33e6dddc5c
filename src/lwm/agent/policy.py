"""The task suites' scripted policies: the experts whose real-environment episodes warm a small policy up before
RL (it must be able to act at all) and the reader; ``make_policy`` reads any policy spec (these, or a model:
``lwm.rollout.policies``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lwm.agent.search_suite import TITLES, base_family, expert_queries, title_pattern
from lwm.rollout.checks import FINAL, observed_cells
from lwm.rollout.loop import Episode, Policy
from lwm.rollout.policies import call, keys, model_policy, turns
from lwm.rollout.table import to_markdown
from lwm.rollout.tasks import Task


def expert_replies(task: Task) -> list[str]:
    """What a competent agent does for ``task``: the searches or commands, then the right answer."""
    check = task.check
    if task.domain == "search":
        steps = [call("web_search", query=query) for query in expert_queries(task)]
        return [*steps, call(FINAL, answer=to_markdown(check.gold, check.columns))]
    if task.domain == "terminal":
        return [*_terminal_commands(task), call(FINAL, answer="done")]
    return [*_mcp_calls(task), call(FINAL, answer="done")]


def _terminal_commands(task: Task) -> list[str]:
    expected = task.check.expect[0].strip(":")
    if task.family == "count-lines":
        return [keys("wc -l < data.txt > count.txt")]
    if task.family == "create-file":
        path = task.check.action[0]["keystrokes"].split("cat ")[1].split(" ")[0]
        return [keys(f"mkdir -p {path.split('/')[0]} && echo {expected} > {path}")]
    if task.family == "find-file":
        secret = task.instruction.split("'")[1]
        return [keys(f"grep -l {secret} notes/*.txt | xargs -n1 basename > answer.txt")]
    old = task.instruction.split("from ")[1].split(" to ")[0]
    return [keys(f"sed -i 's/^mode={old}$/{expected}/' config.ini")]


def _mcp_calls(task: Task) -> list[str]:
    text, expect = task.instruction, task.check.expect
    if task.family == "memory-entity":
        kind = text.split("of type '")[1].split("'")[0]
        entity = {"name": expect[0], "entityType": kind, "observations": [expect[1]]}
        return [call("create_entities", entities=[entity])]
    if task.family == "memory-relation":
        a, b, rel = expect
        return [call("create_entities", entities=[{"name": a, "entityType": "person", "observations": []},
                                                  {"name": b, "entityType": "person", "observations": []}]),
                call("create_relations", relations=[{"from": a, "to": b, "relationType": rel}])]
    path = task.check.action["arguments"]["path"]
    return [call("create_directory", path=path.rsplit("/", 1)[0]), call("write_file", path=path, content=expect[0])]


class ExpertPolicy:
    """The scripted expert of each episode's task."""

    name = "expert"

    def act(self, episodes: Sequence[Episode]) -> list[str]:
        out = []
        for episode in episodes:
            if episode.task is None:
                raise ValueError("the expert acts on tasks: this episode has none")
            plan = expert_replies(episode.task)
            out.append(plan[min(turns(episode), len(plan) - 1)])
        return out


class ReaderPolicy:
    """A scripted agent that knows where to look but not the answer: it sends the expert's searches, then
    answers with each entity's summary copied from the first results title that names it (empty when none
    does). Its reward in sim against real, on the same tasks, says how far a simulated engine serves the
    answers a policy is rewarded for (``lwm agent eval --policy reader --mode sim|real``)."""

    name = "reader"

    def __init__(self, tasks: Sequence[Task]):
        unreadable = sorted({t.family for t in tasks if base_family(t.family) not in TITLES})
        if unreadable:
            raise ValueError(f"the reader answers system call and module lookups only, not {', '.join(unreadable)}")

    def act(self, episodes: Sequence[Episode]) -> list[str]:
        out = []
        for episode in episodes:
            task = episode.task
            if task is None:
                raise ValueError("the reader acts on tasks: this episode has none")
            queries, turn = expert_queries(task), turns(episode)
            if turn < len(queries):
                out.append(call("web_search", query=queries[turn]))
                continue
            key, base = task.check.columns[0], base_family(task.family)
            shown = [m["content"] for m in episode.messages[1:] if m["role"] == "user"]
            rows = [{key: row[key], **(observed_cells(title_pattern(base, row[key]), shown) or {})}
                    for row in task.check.gold]
            out.append(call(FINAL, answer=to_markdown(rows, task.check.columns)))
        return out


def make_policy(spec: str, tasks: Sequence[Task] = (), *, max_tokens: int = 160, temperature: float = 0.0,
                seed: int | None = 0, **backend_options: Any) -> Policy:
    """The one reading of a policy spec: ``expert`` (the scripted expert of each episode's task), ``reader`` (searches
    like the expert, copies what it sees), else a model (``lwm.rollout.policies.model_policy``: ``hf:DIR`` or any
    model spec)."""
    if spec == "expert":
        return ExpertPolicy()
    if spec == "reader":
        return ReaderPolicy(tasks)
    return model_policy(spec, max_tokens=max_tokens, temperature=temperature, seed=seed, **backend_options)
