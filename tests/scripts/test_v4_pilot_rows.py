"""scripts/v4_pilot_rows.py: which rows count as echo, held-out style or neither (the pilot's training set)."""

import importlib.util
import json
from pathlib import Path

from lwm.layout import EXAMPLES_HEADING

SCRIPT = Path(__file__).parents[2] / "scripts" / "v4_pilot_rows.py"
spec = importlib.util.spec_from_file_location("v4_pilot_rows", SCRIPT)
rows = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rows)


def row(call: dict, result: str, examples: bool = False) -> dict:
    shown = f"{EXAMPLES_HEADING}:\n...\n\n" if examples else ""
    action = f"{shown}### Turn 1\n\n**Action:**\n```json\n{json.dumps(call, indent=2)}\n```"
    return {"prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": action}],
            "completion": [{"role": "assistant",
                            "content": f"<predicted_observation>\n{result}\n</predicted_observation>"}]}


def test_a_result_that_repeats_an_argument_is_an_echo_row_even_beside_examples():
    call = {"name": "think", "arguments": {"thoughtNumber": 15, "totalThoughts": 21, "done": True}}
    assert rows.kind(row(call, '{"thoughtNumber": 15, "totalThoughts": 21}', examples=True)) == "echo"


def test_a_result_without_examples_or_echo_is_held_out_style_and_with_examples_neither():
    call = {"name": "read_query", "arguments": {"query": "SELECT 1"}}
    assert rows.kind(row(call, '[{"1": 1}]')) == "unseen"
    assert rows.kind(row(call, '[{"1": 1}]', examples=True)) == "other"


def test_edits_are_never_chosen_and_an_error_is_no_echo():
    call = {"name": "read_query", "arguments": {"query": "SELECT x"}}
    assert rows.kind(row(call, "@edit previous")) == "other"
    assert rows.kind(row(call, "Error: no such column in SELECT x")) == "unseen"
    assert rows.kind(row(call, "Error: no such column in SELECT x", examples=True)) == "other"


def test_the_chosen_rows_are_half_echo_half_unseen_of_one_domain_plus_replay_of_each_other():
    think = {"name": "think", "arguments": {"thoughtNumber": 15}}
    query = {"name": "read_query", "arguments": {"query": "SELECT 1"}}
    built = [{**row(think, '{"thoughtNumber": 15}'), "domain": "mcp", "id": f"e{k}"} for k in range(6)]
    built += [{**row(query, '[{"1": 1}]'), "domain": "mcp", "id": f"u{k}"} for k in range(6)]
    built += [{**row(query, '[{"1": 1}]', examples=True), "domain": "mcp", "id": f"o{k}"} for k in range(6)]
    built += [{**row(query, "$ ls"), "domain": d, "id": f"{d}{k}"} for d in ("os", "web") for k in range(5)]
    chosen = rows.choose(built, 4, replay=3)
    ids = sorted(r["id"][0] for r in chosen if r["domain"] == "mcp")
    assert ids == ["e", "e", "u", "u"]  # never an 'other' row of the chosen domain
    assert sum(r["domain"] == "os" for r in chosen) == 3 and sum(r["domain"] == "web" for r in chosen) == 3
    assert [r["id"] for r in rows.choose(built, 4, replay=3)] == [r["id"] for r in chosen]  # seeded
    assert all(r["domain"] == "mcp" for r in rows.choose(built, 4))  # no replay: the pilot's MCP-only set
