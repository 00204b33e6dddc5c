"""A task's checker: the one place where an answer and an episode become a reward, for the agent loop, a served
task session and ``lwm.rollout.task_env.TaskEnv`` (a Gymnasium wrapper, so a plain ``step`` loop gets it too).

- ``table``: item-level F1 of the answer table against the gold rows.
- ``observed``: the same F1 against the row the agent was shown (the first match of the task's pattern in its
  observations): answering consistently with the world it saw, simulated or real.
- ``state``: the check action run in the episode's environment after the episode (not part of its
  trajectory); the share of expected texts present and absent ones missing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import gymnasium as gym

from lwm.rollout.table import item_f1
from lwm.rollout.tasks import Task

FINAL = "final_answer"


def final_answer(action: Any) -> str | None:
    """The answer of a ``final_answer`` call (given as JSON text or already parsed), else None."""
    data = action
    if isinstance(action, str):
        try:
            data = json.loads(action)
        except ValueError:
            return None
    if isinstance(data, dict) and data.get("name") == FINAL:
        answer = (data.get("arguments") or {}).get("answer", "")
        return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    return None


def observed_cells(pattern: str, shown: Iterable[str]) -> dict[str, str] | None:
    """The named groups of the first match of ``pattern`` in what the agent was shown, stripped; None when
    nothing matches."""
    for text in shown:
        found = re.search(pattern, text)
        if found:
            return {k: v.strip() for k, v in found.groupdict().items()}
    return None


def check(task: Task, answer: str | None, shown: Iterable[str], env: gym.Env) -> tuple[float, str | None]:
    """(reward, the check action's observation for ``state`` checks) of an episode of ``task`` that ended with
    ``answer``, its observations as the agent saw them being ``shown``; ``env`` is the episode's environment."""
    spec = task.check
    if spec.kind == "table":
        return item_f1(answer or "", spec.gold, spec.columns, spec.text_columns), None
    if spec.kind == "observed":
        found = observed_cells(spec.pattern or "(?!)", shown)
        gold = [{**spec.gold[0], **found}] if found is not None else []
        return item_f1(answer or "", gold, spec.columns, spec.text_columns), None
    inner = env.unwrapped
    control, inner.control = inner.control, None  # the state as it is: no injected fault on the check
    history = inner.trajectory
    try:
        observation, *_ = inner.step(spec.action)  # after the episode, and not part of its trajectory
    finally:
        inner.control, inner.trajectory = control, history
    met = sum(text in observation for text in spec.expect) + sum(text not in observation for text in spec.absent)
    return met / max(1, len(spec.expect) + len(spec.absent)), observation
