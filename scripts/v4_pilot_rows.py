"""The rows of lwm-mini v4's CPU pilot (issue 44, configs/lwm-mini-v4/pilot-cpu.yaml), chosen from an SFT set
built by ``lwm data build --edits --retrieve``: half rows that show no retrieved example (the held-out style:
the model writes a tool's result from its line and its call alone), half rows whose result repeats a value of
its call's arguments (what the held-out sequential-thinking server does, and v3.1 did not: it invented the
numbers). Edit answers are left out of both halves and errors out of the echo half (an unseen tool's error
is a first result too; lwm data build keeps errors to a fifth of a source's rows). Seeded: the same set gives
the same rows.

    python scripts/v4_pilot_rows.py runs/v4/sft-mcp.jsonl runs/v4/sft-pilot.jsonl --rows 128
    python scripts/v4_pilot_rows.py runs/v4/sft-all.jsonl runs/v4/sft-mixed.jsonl --rows 34 --replay 6  # mixed
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from lwm.layout import EXAMPLES_HEADING
from lwm.parsing import OBSERVATION_TAG, extract_tag

CALL = re.compile(r"```json\n(.*?)\n```", re.S)


def argument_values(value: Any) -> Iterator[str]:
    """Every leaf value of a call's arguments of at least two characters (booleans and nulls say nothing)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from argument_values(item)
    elif isinstance(value, list):
        for item in value:
            yield from argument_values(item)
    elif value is not None and not isinstance(value, bool) and len(str(value)) >= 2:
        yield str(value)


def kind(row: dict) -> str:
    """``echo``, ``unseen`` (no example shown) or ``other`` (an edit, or neither)."""
    last = row["prompt"][-1]["content"]
    result = (extract_tag(row["completion"][-1]["content"], OBSERVATION_TAG) or "").strip("\n")
    if result.startswith("@edit"):
        return "other"
    calls = CALL.findall(last)
    try:
        call = json.loads(calls[-1]) if calls else {}
    except json.JSONDecodeError:
        call = {}
    if not result.lstrip().startswith("Error") and \
            any(value in result for value in argument_values(call.get("arguments", {}))):
        return "echo"
    return "unseen" if EXAMPLES_HEADING not in last else "other"


def choose(built: list[dict], rows: int, seed: int = 0, domain: str = "mcp", replay: int = 0) -> list[dict]:
    """``rows`` of ``domain`` (half echo, half held-out style) and ``replay`` rows of each other domain as they
    come (what the adapter knew of them: without them the MCP rows took OS down 29 points), shuffled."""
    groups: dict[str, list[dict]] = {"echo": [], "unseen": [], "other": []}
    others: dict[str, list[dict]] = {}
    for row in built:
        if row.get("domain") == domain:
            groups[kind(row)].append(row)
        else:
            others.setdefault(str(row.get("domain")), []).append(row)
    pick = random.Random(seed)
    chosen = pick.sample(groups["echo"], min(len(groups["echo"]), rows // 2))
    chosen += pick.sample(groups["unseen"], min(len(groups["unseen"]), rows - len(chosen)))
    for name in sorted(others):
        chosen += pick.sample(others[name], min(len(others[name]), replay))
    pick.shuffle(chosen)
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("built", help="SFT rows from lwm data build (JSONL)")
    parser.add_argument("out", help="the chosen rows (JSONL)")
    parser.add_argument("--rows", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--domain", default="mcp", help="only rows of this domain are chosen from")
    parser.add_argument("--replay", type=int, default=0, help="also this many rows of each other domain")
    args = parser.parse_args()
    with open(args.built) as f:
        built = [json.loads(line) for line in f]
    chosen = choose(built, args.rows, args.seed, args.domain, args.replay)
    with open(args.out, "w") as f:
        f.writelines(json.dumps(row) + "\n" for row in chosen)
    counts = Counter(str(r.get("domain")) for r in chosen)
    print(f"{len(built)} rows read -> {len(chosen)} rows in {args.out}:",
          ", ".join(f"{name} {count}" for name, count in sorted(counts.items())))


if __name__ == "__main__":
    main()
