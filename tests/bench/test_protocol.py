import json

import pytest
from typer.testing import CliRunner

from lwm.bench.protocol import ProtocolError, load_protocol
from lwm.bench.samples import BenchSample, load_samples
from lwm.cli import app
from lwm.testing.openai_server import ScriptedServer
from tests.bench.checkout import JUDGE_PROMPT, write_checkout

runner = CliRunner()
VERDICT = ('thinking first\n<verdict>```json\n{"strengths": ["s"], "weaknesses": [], "scores": {"format": 5, '
           '"factuality": 4, "consistency": 4, "realism": 5, "quality": 3}}\n```</verdict>')
ROWS = [
    {"task": "agentworld/terminal", "id": "t-1", "prompt": ["ls", "cat a.txt"],
     "response": ["[[obs]]\n  a.txt", "[[obs]] hello"], "current_prompt": "ls -- as current_prompt",
     "system_str": "You simulate a shell.", "turn_idx": 1, "total_turns": 2, "source": "kept"},
    {"task": "agentworld/terminal", "id": "t-2", "prompt": ["ls", "cat a.txt"],
     "response": ["[[obs]]\n  a.txt", "[[obs]] hello"], "current_prompt": "",
     "system_str": "You simulate a shell.", "turn_idx": 2, "total_turns": 2},
    {"task": "mcp", "id": "m-1", "prompt": ["call get_time"], "response": ['{"t": 1}'], "current_prompt": "",
     "system_str": "", "turn_idx": 1, "total_turns": 1},
]


@pytest.fixture
def checkout(tmp_path):
    return write_checkout(tmp_path / "Qwen-AgentWorld")


@pytest.fixture
def data(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "terminal_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS[:2]))
    (folder / "mcp_test.jsonl").write_text(json.dumps(ROWS[2]) + "\n")
    return folder


def test_the_protocol_is_read_from_the_checkout_as_data(checkout):
    protocol = load_protocol(checkout)
    assert protocol.defaults == {"infer": {"max_tokens": 30000, "temperature": 0.7},
                                 "judge": {"max_tokens": 20000, "temperature": 0.3, "max_retries": 2}}
    assert protocol.judge_prompts["terminal"] == JUDGE_PROMPT  # as the file has it: not stripped
    assert protocol.marker("terminal") == "[[obs]]" and protocol.verdict_tag("android") == "verdict"
    assert protocol.marker("android") == ""  # an unknown domain has no marker, and mcp's tags
    assert protocol.revision.startswith("sha256:")


def test_the_judge_request_follows_the_checkouts_layout(checkout):
    protocol = load_protocol(checkout)
    second = BenchSample.model_validate(ROWS[1])
    system, user = protocol.judge_messages(second, " hi [[obs]]there")  # marker mid-text removed
    assert system == {"role": "system", "content": JUDGE_PROMPT}
    assert user["content"] == ("## Earlier:\nls\n[[obs]]\n  a.txt\n\n\n\n## Now:\ncat a.txt\n\nSIM<<hi there>>\n\n"
                               'REAL<<hello>>\n\nRate it, five numbers in {"scores": ...} inside <verdict>.')
    first = BenchSample.model_validate(ROWS[0])  # no history: no context block; current_prompt shown to the judge
    assert protocol.judge_messages(first, "x")[1]["content"].startswith("## Now:\nls -- as current_prompt\n\n")


def test_a_folder_that_is_not_a_checkout_is_refused_in_one_line(tmp_path, data):
    with pytest.raises(ProtocolError, match="no eval/lwm_eval_utils/task_configs.py"):
        load_protocol(tmp_path)
    result = runner.invoke(app, ["bench", "infer", "--data", str(data), "--out", str(tmp_path / "o"),
                                 "--model", "mock", "--protocol", str(tmp_path)])
    assert result.exit_code == 2 and "point it at a checkout of QwenLM/Qwen-AgentWorld" in result.output


def test_bench_run_with_the_protocol_sends_the_published_requests(checkout, data, tmp_path):
    """Inference: the sample's system prompt, its earlier turns, then prompt[turn_idx - 1] (not current_prompt),
    sampled with the checkout's defaults and no seed. Judging: the checkout's layout and judge prompt, its
    sampling. Rows keep every input field, in data order; scores.json says which protocol it is."""
    out = tmp_path / "run"
    answer = "<think>plan</think><predicted_observation>[[obs]]  predicted</predicted_observation>"
    with ScriptedServer([answer]) as model, ScriptedServer([VERDICT]) as judge:
        args = ["bench", "run", "--data", str(data), "--out", str(out), "--model", "openai:wm",
                "--base-url", model.base_url, "--judge", "openai:judge", "--judge-base-url", judge.base_url,
                "--protocol", str(checkout), "--concurrency", "1"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        inferred, judged = list(model.requests), list(judge.requests)
        runner.invoke(app, [*args, "--force-new"])
        assert len(model.requests) == 2 * len(inferred)  # sampled without a seed: never answered from the cache
    assert all(set(r) == {"model", "messages", "temperature", "max_tokens"} for r in inferred + judged)
    assert {(r["temperature"], r["max_tokens"]) for r in inferred} == {(0.7, 30000)}
    assert {(r["temperature"], r["max_tokens"]) for r in judged} == {(0.3, 20000)}
    by_current = {r["messages"][-1]["content"]: r["messages"] for r in inferred}
    assert by_current["cat a.txt"] == [{"role": "system", "content": "You simulate a shell."},
                                       {"role": "user", "content": "ls"},
                                       {"role": "assistant", "content": "[[obs]]\n  a.txt"},
                                       {"role": "user", "content": "cat a.txt"}]
    assert "ls" in by_current and by_current["call get_time"] == [{"role": "user", "content": "call get_time"}]
    protocol = load_protocol(checkout)
    samples = {s.id: s for s in load_samples(data)}
    assert sorted(json.dumps(r["messages"]) for r in judged) == sorted(
        json.dumps(protocol.judge_messages(s, "[[obs]]  predicted")) for s in samples.values())
    rows = [json.loads(line) for line in (out / "judged.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["m-1", "t-1", "t-2"]  # data order (files sorted by name, as published)
    first = next(r for r in rows if r["id"] == "t-1")
    assert {k: first[k] for k in ROWS[0]} == ROWS[0]
    assert first["gen"] == answer and first["extracted_output"] == "[[obs]]  predicted"
    assert first["total_score"] == pytest.approx(4.2) and first["failed"] == 0.0
    scores = json.loads((out / "scores.json").read_text())
    assert scores["judge_protocol"].startswith("the published AgentWorldBench judge protocol")


def test_without_the_protocol_the_scores_say_they_are_lwms_own(data, tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["bench", "run", "--data", str(data), "--out", str(out), "--model", "mock"])
    assert result.exit_code == 0, result.output
    assert "not to published numbers" in json.loads((out / "scores.json").read_text())["judge_protocol"]


def test_the_published_scripts_files_are_read_and_lwms_are_written_for_it(data, tmp_path):
    """A predictions file as the published script writes it (the sample rows plus gen), with a repeated id
    and a row whose turn has no response: judged from --predictions, every row scored as the script would
    (repeats apart, the missing response against an empty ground truth), then scored from the judged file."""
    rows = [dict(r, gen="<predicted_observation>hello</predicted_observation>") for r in ROWS]
    rows.append(dict(ROWS[0], gen="<think>only reasoning</think>"))  # the same id again
    rows.append(dict(ROWS[2], id="m-2", turn_idx=2, gen=""))  # no response at turn 2; nothing generated
    published = tmp_path / "predictions.jsonl"
    published.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "judged"
    result = runner.invoke(app, ["bench", "judge", "--predictions", str(published), "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    assert "repeated id (occurrence 2)" in result.output and "has no response" in result.output
    judged = [json.loads(line) for line in (out / "judged.jsonl").read_text().splitlines()]
    assert [(r["id"], r.get("occurrence")) for r in judged] == [("t-1", None), ("t-2", None), ("m-1", None),
                                                                ("t-1", 2), ("m-2", None)]
    assert judged[3]["extracted_output"] == "No output" and judged[3]["failed"] == 0.0
    assert judged[4]["failed"] == 1.0 and judged[4]["error_message"] == "No model generation"
    assert all(r["prompt"] and "system_str" in r for r in judged)
    nowhere = runner.invoke(app, ["bench", "score", "--predictions", str(out / "judged.jsonl")])
    assert nowhere.exit_code == 2 and "give --out" in nowhere.output  # never written beside another tool's file
    result = runner.invoke(app, ["bench", "score", "--predictions", str(out / "judged.jsonl"), "--out",
                                 str(tmp_path / "scored")])
    assert result.exit_code == 0, result.output
    assert not (out / "scores.json").exists()
    scores = json.loads((tmp_path / "scored" / "scores.json").read_text())
    assert (scores["samples"], scores["valid"], scores["failed"]) == (5, 4, 1)


def test_a_published_judged_file_scores_as_the_published_script_scores_it(tmp_path):
    """Missing or zero dimensions are left out of their mean, failed rows are counted, repeated ids both count."""
    judged = [dict(ROWS[0], format=5, factuality=3, consistency=0, realism=4, quality=4, total_score=4.0, failed=0.0),
              dict(ROWS[0], format=1, factuality=1, consistency=1, realism=1, quality=1, total_score=1.0, failed=0.0),
              dict(ROWS[1], total_score=0, failed=1.0, error_message="Judge scoring failed")]
    path = tmp_path / "judged.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in judged))
    result = runner.invoke(app, ["bench", "score", "--predictions", str(path), "--no-report", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    scores = json.loads((tmp_path / "scores.json").read_text())
    terminal = scores["domains"]["terminal"]
    assert (terminal["valid"], terminal["failed"]) == (2, 1)
    assert terminal["consistency"] == 0.0 and terminal["format"] == 50.0  # (1-1)/4*100; ((5+1)/2-1)/4*100
    assert scores["overall"] == pytest.approx((2.5 - 1) / 4 * 100)


def test_the_protocols_budget_shrinks_to_the_window_and_a_prompt_that_cannot_fit_never_fits(checkout, data, tmp_path):
    """Messages are sent whole under the protocol: the answer gets what the window leaves (at most the
    protocol's budget), and a sample whose messages alone fill the window fails as never fitting."""
    import asyncio

    from lwm.backends import GenerateConfig, MockBackend
    from lwm.bench.run import infer, predictions
    from lwm.conversation import ContextOverflowError
    from lwm.worldmodel import WorldModel

    messages = BenchSample.model_validate(ROWS[1]).conversation().messages()
    roomy = WorldModel(MockBackend(context_window=10_000), cache=False)
    assert roomy.answer_room(messages, 30000) < 10_000 and roomy.answer_room(messages, 500) == 500
    with pytest.raises(ContextOverflowError):
        WorldModel(MockBackend(context_window=20), cache=False).answer_room(messages, 30000)
    tight = WorldModel(MockBackend(context_window=30), cache=False, config=GenerateConfig(max_tokens=30000))
    asyncio.run(infer(load_samples(data), tight, tmp_path / "run", protocol=load_protocol(checkout)))
    rows = predictions(tmp_path / "run").by_id()
    assert rows["t-2"].never_fits and not rows["m-1"].never_fits  # "call get_time" alone fits in 30 tokens
    assert [m for m in tight.backend.calls if m[-1]["content"] == "call get_time"]
