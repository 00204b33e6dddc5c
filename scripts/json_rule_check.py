"""How often lwm's JSON rule (``lwm.forms.expects_json``) says JSON where the real result is JSON, on real MCP sessions.

    python scripts/json_rule_check.py TRAJECTORIES.jsonl [MORE.jsonl ...]

For every MCP turn whose real result is not an error, the rule is asked with what a world model has at that
point (the session's earlier results, the tool's output schema; no retrieved examples) and compared with the
real result: the rule as it was before issue 60 (the tool's own latest result, else its schema) and as it is.
"""

from __future__ import annotations

import sys
from collections import Counter

from rich.console import Console
from rich.table import Table

from lwm.data import read_trajectories
from lwm.forms import expects_json, is_error, is_json


def old_rule(own: list[str], schema: bool) -> bool:
    return is_json(own[-1]) if own else schema


def main(paths: list[str]) -> None:
    counts: dict[str, Counter[str]] = {"before": Counter(), "now": Counter()}
    for path in paths:
        for trajectory in read_trajectories(path):
            if trajectory.domain != "mcp":
                continue
            schemas = {str(t.get("name")) for t in trajectory.context.tools or () if isinstance(t, dict)
                       and (t.get("outputSchema") or t.get("output_schema"))}
            calls: list[tuple[str, str]] = []
            for turn in trajectory.turns:
                name = str((turn.action.content or {}).get("name")) if isinstance(turn.action.content, dict) else ""
                real = turn.observation.content
                if not is_error(real):
                    own = [r for n, r in calls if n == name]
                    others = [r for n, r in calls if n != name]
                    truth = is_json(real)
                    for rule, said in (("before", old_rule(own, name in schemas)),
                                       ("now", expects_json(own, [], name in schemas, others))):
                        counts[rule][f"{'json' if said else 'any'} / real {'json' if truth else 'text'}"] += 1
                calls.append((name, real))
    table = Table(title="JSON rule against the real result (MCP turns that are not errors)")
    for column in ("rule", "says JSON, real JSON", "says JSON, real text", "says nothing, real JSON",
                   "says nothing, real text", "JSON results caught"):
        table.add_column(column, justify="right")
    for rule, c in counts.items():
        hit, wrong = c["json / real json"], c["json / real text"]
        miss, rest = c["any / real json"], c["any / real text"]
        table.add_row(rule, str(hit), str(wrong), str(miss), str(rest), f"{hit / max(1, hit + miss):.0%}")
    Console().print(table)


if __name__ == "__main__":
    main(sys.argv[1:])
