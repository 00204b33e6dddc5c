"""`lwm train rl` (GRPO with the rule-metric reward) at toy size."""

import json

import pytest
from typer.testing import CliRunner

from lwm.bench.samples import export_trajectories
from lwm.bench.scorer import load_scorer
from lwm.cli import app
from lwm.data.build import build
from lwm.testing.openai_server import ScriptedServer
from lwm.train.rl import sample_from_row, scorer_reward
from lwm.worldmodel import run_sync
from tests.samples import trajectory

pytest.importorskip("trl")


def test_rule_reward_prefers_the_real_observation():
    real = "user@lwm:~$ ls\nnotes.txt\nuser@lwm:~$"
    good = [{"role": "assistant", "content": f"<predicted_observation>{real}</predicted_observation>"}]
    bad = [{"role": "assistant", "content": "<predicted_observation>I cannot do that.</predicted_observation>"}]
    prompt = [{"role": "system", "content": "simulate"}, {"role": "user", "content": "ls"}]
    rewards = scorer_reward(load_scorer("rules"))([prompt, prompt], [good, bad], reference=[real, real],
                                                  history=[[], []], domain=["terminal", "terminal"])
    assert rewards[0] == pytest.approx(1.0) and 0 <= rewards[1] < 0.5


@pytest.mark.slow
def test_grpo_runs_with_the_rule_reward(tmp_path, tiny_model_dir):
    data = tmp_path / "rl.jsonl"
    build("rl", [trajectory(d) for d in ("terminal", "mcp")], data, compact=True)
    config = tmp_path / "rl.json"
    config.write_text(json.dumps({"data": str(data), "output_dir": str(tmp_path / "rl"), "model": str(tiny_model_dir),
                                  "max_steps": 2, "per_device_train_batch_size": 2, "num_generations": 2,
                                  "max_completion_length": 8, "save_steps": 2}))
    result = CliRunner().invoke(app, ["train", "rl", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "rl" / "checkpoint-2").is_dir() and (tmp_path / "rl" / "final" / "adapter_config.json").exists()


VERDICT = ('<final_evaluation>{"scores": {"format": 5, "factuality": 3, "consistency": 5, "realism": 4, '
           '"quality": 3}}</final_evaluation>')


def test_an_rl_row_is_scored_exactly_as_the_benchmark_scores_its_sample(tmp_path):
    """One history for scoring: the RL reward and bench judge give the same prediction the same score."""
    data = tmp_path / "rl.jsonl"
    source = trajectory("terminal")
    build("rl", [source], data)
    row = [json.loads(line) for line in data.read_text().splitlines()][1]
    sample = sample_from_row(row["prompt"], row["history"], row["reference"], row["domain"])
    bench = export_trajectories([source])[1]
    assert sample.conversation() == bench.conversation() and sample.reference == bench.reference
    prediction = "user@lwm:~$ cat notes.txt\nsomething else\nuser@lwm:~$"
    completion = [{"role": "assistant", "content": f"<predicted_observation>{prediction}</predicted_observation>"}]
    verdict = run_sync(load_scorer("rules").score(bench, prediction))
    reward = scorer_reward(load_scorer("rules"))([row["prompt"]], [completion], reference=[row["reference"]],
                                                 history=[row["history"]], domain=[row["domain"]])
    assert reward == [pytest.approx(verdict.reward)] and 0 < verdict.reward < 1


def test_judge_reward_scores_through_a_real_server_and_survives_bad_answers():
    messages = [{"role": "system", "content": "simulate"}, {"role": "user", "content": "ls"}]
    completion = [{"role": "assistant", "content": "<predicted_observation>a.txt</predicted_observation>"}]
    with ScriptedServer(["not a verdict", VERDICT, VERDICT]) as server:
        reward = scorer_reward(load_scorer(f"openai:judge?base_url={server.base_url}", retries=2), concurrency=1)
        scores = reward(prompts=[messages, messages], completions=[completion, completion],
                        reference=["a.txt", "a.txt"], history=[[], []], domain=["terminal", "terminal"])
        judged = [r for r in server.requests if "a.txt" in json.dumps(r)]
    assert scores == [pytest.approx((4.0 - 1) / 4)] * 2  # the garbage answer was retried
    assert len(judged) == 3
    with ScriptedServer(["never a verdict"]) as server:
        reward = scorer_reward(load_scorer(f"openai:judge?base_url={server.base_url}", retries=2))
        assert reward(prompts=[messages], completions=[completion], reference=["a.txt"], history=[[]],
                      domain=["terminal"]) == [0.0]


@pytest.mark.slow
def test_grpo_runs_with_the_hybrid_reward(tmp_path, tiny_model_dir):
    data = tmp_path / "rl.jsonl"
    build("rl", [trajectory("terminal")], data, compact=True)
    config = tmp_path / "rl.json"
    with ScriptedServer([VERDICT]) as server:
        config.write_text(json.dumps({
            "data": str(data), "output_dir": str(tmp_path / "rl"), "model": str(tiny_model_dir), "max_steps": 1,
            "per_device_train_batch_size": 2, "num_generations": 2, "max_completion_length": 8, "rule_weight": 0.5,
            "judge_weight": 0.5, "judge_model": f"openai:judge?base_url={server.base_url}"}))
        result = CliRunner().invoke(app, ["train", "rl", "--config", str(config)])
        judged = len(server.requests)
    assert result.exit_code == 0, result.output
    assert judged == 2  # one judge call per completion of the step
    log = json.loads((tmp_path / "rl" / "final" / "adapter_config.json").read_text())
    assert log["r"] == 8


@pytest.mark.slow
def test_grpo_keeps_training_the_sft_adapter(tmp_path, tiny_model_dir):
    sft_data, rl_data = tmp_path / "sft.jsonl", tmp_path / "rl.jsonl"
    build("sft", [trajectory("terminal")], sft_data, compact=True)
    build("rl", [trajectory("terminal")], rl_data, compact=True)
    runner = CliRunner()
    sft = tmp_path / "sft.json"
    sft.write_text(json.dumps({"data": str(sft_data), "output_dir": str(tmp_path / "sft"), "model": str(tiny_model_dir),
                               "max_steps": 1, "per_device_train_batch_size": 1, "max_length": 2048, "lora_r": 4}))
    assert runner.invoke(app, ["train", "sft", "--config", str(sft)]).exit_code == 0
    rl = tmp_path / "rl.json"
    rl.write_text(json.dumps({"data": str(rl_data), "output_dir": str(tmp_path / "rl"),
                              "model": str(tmp_path / "sft" / "final"), "max_steps": 1, "per_device_train_batch_size": 2,
                              "num_generations": 2, "max_completion_length": 8}))
    result = runner.invoke(app, ["train", "rl", "--config", str(rl)])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "rl" / "final" / "adapter_config.json").read_text())["r"] == 4
