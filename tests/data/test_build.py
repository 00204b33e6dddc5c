import json

import pytest

from lwm.backends import MockBackend
from lwm.data.build import SEPARATOR, HeldOutLeak, build, cpt_rows, rl_rows, sft_rows
from lwm.types import Observation
from lwm.worldmodel import WorldModel
from tests.samples import trajectory


def test_sft_uses_the_inference_layout_and_tags_the_answer():
    t = trajectory("terminal")
    rows = list(sft_rows([t]))
    assert [r["id"] for r in rows] == [f"{t.id}-t1", f"{t.id}-t2"]
    expected = WorldModel(MockBackend(context_window=None), cache=False).build_prompt(
        t.model_copy(update={"turns": t.turns[:1]}), t.turns[1].action).messages
    assert rows[1]["prompt"] == expected
    assert rows[1]["completion"][0] == {"role": "assistant", "content":
                                       f"<predicted_observation>\n{t.turns[1].observation.content}\n</predicted_observation>"}


@pytest.mark.embedded
def test_a_token_budget_drops_the_oldest_turns_and_skips_what_cannot_fit(tmp_path):
    from lwm.backends.embedded import EmbeddedBackend

    t = trajectory("terminal")
    long = t.model_copy(update={"turns": t.turns * 6})
    skipped: list[str] = []
    rows = list(sft_rows([long], compact=True, max_tokens=400, skipped=skipped))
    count = EmbeddedBackend(n_ctx=400).count_tokens
    assert rows and not skipped
    for row in rows:
        assert sum(count(m["content"]) + 8 for m in row["prompt"] + row["completion"]) <= 400
    assert "omitted to fit" in rows[-1]["prompt"][0]["content"]
    assert list(sft_rows([long], compact=False, max_tokens=60, skipped=skipped)) == []
    assert len(skipped) == len(long.turns)


def test_sft_keeps_reasoning_when_the_source_has_it():
    t = trajectory("mcp", 1)
    turn = t.turns[0].model_copy(update={"observation": Observation(content="{}", reasoning="the graph is empty")})
    row = next(sft_rows([t.model_copy(update={"turns": [turn]})]))
    assert row["completion"][0]["content"].startswith("<think>\nthe graph is empty\n</think>\n<predicted_observation>")


def test_rl_rows_carry_prompt_reference_and_history():
    t = trajectory("swe")
    rows = list(rl_rows([t]))
    assert rows[1]["prompt"][-1]["content"].startswith("### Turn 2") and rows[1]["prompt"][-1]["role"] == "user"
    assert rows[1]["reference"] == t.turns[1].observation.content
    from lwm.bench.samples import export_trajectories

    assert rows[1]["history"] == [list(pair) for pair in export_trajectories([t])[1].history]


def test_cpt_packs_whole_trajectories_into_blocks():
    ts = [trajectory(d) for d in ("terminal", "mcp", "web", "os")]
    blocks = list(cpt_rows(ts, block_chars=10_000))
    texts = SEPARATOR.join(b["text"] for b in blocks)
    assert all("### Turn 2" in texts for _ in ts) and texts.count(SEPARATOR) == len(ts) - 1
    assert len(list(cpt_rows(ts, block_chars=1))) == len(ts)


def test_held_out_trajectories_never_reach_training(tmp_path):
    t = trajectory("terminal")
    with pytest.raises(HeldOutLeak, match="held-out"):
        build("sft", [t], tmp_path / "x.jsonl", heldout_ids={t.id})
    assert build("rl", [t], tmp_path / "rl.jsonl", heldout_ids={"other"}) == 2
    assert json.loads((tmp_path / "rl.jsonl").read_text().splitlines()[0])["domain"] == "terminal"


def test_take_keeps_a_seeded_sample_per_domain_and_drops_the_rest(tmp_path):
    ts = [trajectory(d) for d in ("terminal", "mcp", "web", "os")]  # two turns each
    out = tmp_path / "sft.jsonl"
    assert build("sft", ts, out, take={"os": 2, "mcp": 1}, seed=3) == 3
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["domain"] for r in rows) == ["mcp", "os", "os"]
    again = tmp_path / "again.jsonl"
    build("sft", ts, again, take={"os": 2, "mcp": 1}, seed=3)
    assert again.read_text() == out.read_text()
    with pytest.raises(ValueError, match="only 2 web rows"):
        build("sft", ts, out, take={"web": 3})
    with pytest.raises(ValueError, match="cpt"):
        build("cpt", ts, out, take={"web": 1})


def test_guided_rows_are_asked_as_the_model_is_and_keep_errors_to_their_share():
    """edits + retrieval: the row's prompt is the one WorldModel(edits, retriever) sends, the answer is the
    shortest edit (here against the session's last call of the same tool), and errors keep to their share."""
    import asyncio

    from lwm.data.build import Guidance
    from lwm.domains import get_domain
    from lwm.retrieval import TransitionIndex
    from lwm.types import Action, Provenance, Trajectory

    pytest.importorskip("bm25s")
    t = Trajectory(id="think-1", domain="mcp", provenance=Provenance(source="real", extra={"source": "mcp:think"}))
    result = "{\n" + "".join(f'  "field{n}": "a value that stays",\n' for n in range(8)) + '  "thoughtNumber": 1\n}'
    calls = [("think", result), ("list", "[]"), ("think", result.replace(": 1\n", ": 2\n"))]
    calls += [("bad", f"Error: MCP error -32602: bad {n}") for n in range(8)]
    for name, text in calls:
        t = t.extended(Action(content={"name": name, "arguments": {}}), Observation(content=text))
    other = t.model_copy(update={"id": "think-2"})
    guided = Guidance(edits=True, retriever=TransitionIndex.build([t, other]), unseen_share=0.0)
    rows = {r["id"]: r for r in sft_rows([t], guided=guided)}
    # 8 errors in 11 rows: kept to a fifth of what is left, the same rows every build
    errors = [i for i, r in rows.items() if "Error:" in r["completion"][0]["content"]]
    assert len(errors) < 8 and len(rows) - len(errors) == 3
    assert rows == {r["id"]: r for r in sft_rows([t], guided=guided)}
    third = rows["think-1-t3"]
    assert third["completion"][0]["content"].startswith("<predicted_observation>\n@edit turn 1\n")
    wm = WorldModel(MockBackend(["<predicted_observation>\n@edit turn 1\n</predicted_observation>"],
                                context_window=None), cache=False, edits=True, retriever=guided.retriever)
    conv = wm.conversation(t.model_copy(update={"turns": t.turns[:2]}), t.turns[2].action)
    observation = asyncio.run(wm.complete(conv, get_domain("mcp"), exclude={"think-1"}))
    assert wm.backend.calls[-1] == third["prompt"] and "Example 1 (mcp:think)" in third["prompt"][-1]["content"]
    assert observation.content == result
