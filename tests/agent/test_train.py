"""`lwm agent train` at toy size: GRPO over multi-turn rollouts of the agent loop, sim and real, resumable."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lwm.agent.train import episode_tokens
from lwm.cli import app
from lwm.data import read_trajectories
from tests.waiting import wait_for

pytest.importorskip("trl")
pytestmark = pytest.mark.slow
LWM = str(Path(sys.executable).parent / "lwm")


def write_config(path: Path, model: Path, out: Path, **fields) -> Path:
    config = {"output_dir": str(out), "model": str(model), "domain": "search", "families": ["signal"], "limit": 4,
              "episode_steps": 2, "reply_tokens": 8, "max_steps": 2, "per_device_train_batch_size": 2,
              "num_generations": 2, "max_completion_length": 256, "save_steps": 1, **fields}
    path.write_text(json.dumps(config))
    return path


def test_episode_tokens_mask_the_environment_and_train_on_replies():
    from transformers import AutoTokenizer

    from lwm.train.base_model import base_model_dir

    tokenizer = AutoTokenizer.from_pretrained(base_model_dir("smollm2"))  # the packaged policy's chat template
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"},
                {"role": "assistant", "content": "ls"}, {"role": "user", "content": "Observation: a"},
                {"role": "assistant", "content": "done"}]
    prompt, completion, mask = episode_tokens(messages, tokenizer, limit=1000)
    assert tokenizer.decode(prompt).endswith("<|im_start|>assistant\n")
    replies = tokenizer.decode([t for t, m in zip(completion, mask, strict=True) if m])
    context = tokenizer.decode([t for t, m in zip(completion, mask, strict=True) if not m])
    assert "ls" in replies and "done" in replies and "Observation" in context and "Observation" not in replies
    assert completion[-1] == tokenizer.eos_token_id  # ends where generation stopped: TRL counts it finished
    trained = [t for t, m in zip(completion, mask, strict=True) if m]
    assert trained.count(tokenizer.eos_token_id) == 2 and tokenizer.decode(trained).count("\n") == 0
    assert len(episode_tokens(messages, tokenizer, limit=3)[1]) == 3


@pytest.mark.parametrize("mode", ["sim", "real"])
def test_agent_grpo_runs_in_sim_and_real_and_records_its_rollouts(tmp_path, tiny_model_dir, mode):
    config = write_config(tmp_path / "agent.json", tiny_model_dir, tmp_path / "run", world_model="mock")
    result = CliRunner().invoke(app, ["agent", "train", "--config", str(config), "--mode", mode])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run" / "checkpoint-2").is_dir() and (tmp_path / "run" / "final" / "adapter_config.json").exists()
    rollouts = list(read_trajectories(tmp_path / "run" / "rollouts"))
    assert len(rollouts) == 2 * 2  # max_steps x per-device batch (one prompt x num_generations): every rollout
    assert {t.provenance.source for t in rollouts} == {"simulated" if mode == "sim" else "real"}
    assert all(t.provenance.extra["task"].startswith("search/signal-") for t in rollouts)


def test_a_killed_agent_training_resumes_from_its_checkpoint(tmp_path, tiny_model_dir):
    config = write_config(tmp_path / "agent.json", tiny_model_dir, tmp_path / "run", world_model="mock", max_steps=6)
    cmd = [LWM, "agent", "train", "--config", str(config), "--mode", "sim"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    assert wait_for(lambda: (tmp_path / "run" / "checkpoint-2").is_dir(), 240)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stdout[-2000:] + rerun.stderr[-2000:]
    assert "resumed from" in rerun.stdout and (tmp_path / "run" / "checkpoint-6").is_dir()


def test_rollouts_go_through_trls_vllm_engine_when_the_trainer_uses_it(tiny_model_dir):
    """A stand-in for TRL's VLLMGeneration (no vLLM here): the rollout tokenizes every episode's conversation,
    syncs the weights once per optimiser step, and decodes what the engine generated."""
    from types import SimpleNamespace

    from transformers import AutoTokenizer

    from lwm.agent.train import AgentRLConfig, make_rollout, vllm_defaults
    from lwm.model_options import world_model
    from lwm.rollout.tasks import tasks

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    reply = tokenizer('{"name": "final_answer", "arguments": {"answer": "x"}}', add_special_tokens=False)["input_ids"]

    class Engine:
        max_completion_length, syncs, calls = 512, 0, []

        def sync_weights(self):
            self.syncs += 1

        def generate(self, prompts, images, num_generations):
            assert all(isinstance(p, list) and all(isinstance(t, int) for t in p) for p in prompts)
            self.calls.append((len(prompts), self.max_completion_length))
            return prompts, [reply] * len(prompts), None, None

    chosen = tasks("search", "train", ["signal"])[:2]
    config = AgentRLConfig(output_dir="unused", mode="sim", domain="search", episode_steps=2, reply_tokens=24,
                           record=False)
    engine = Engine()
    trainer = SimpleNamespace(args=SimpleNamespace(use_vllm=True, max_completion_length=256), vllm_generation=engine,
                              state=SimpleNamespace(global_step=3))
    rollout = make_rollout(config, {t.instruction: t for t in chosen}, tokenizer, world_model("mock"), None)
    out = rollout([t.instruction for t in chosen], trainer)
    out_again = rollout([t.instruction for t in chosen], trainer)
    assert len(engine.calls) >= 2 and set(engine.calls) == {(2, 24)}  # one batch a lockstep step, reply-sized
    assert engine.max_completion_length == 512  # restored for TRL's own use
    assert engine.syncs == 1  # the same optimiser step: weights synced once
    assert len(out["completion_ids"]) == len(out_again["completion_ids"]) == 2
    assert vllm_defaults(config) == {}  # no vLLM installed here: HF generate


def test_a_sim_run_can_give_its_world_model_real_transitions_to_retrieve(tmp_path):
    """``world_model_retrieve`` (rl-lookup-sim-retrieved.yaml) reaches the simulator as ``--retrieve`` does; a real
    run has no simulator."""
    from lwm.agent.train import AgentRLConfig, simulator
    from lwm.retrieval import TransitionIndex

    samples = Path(__file__).parents[2] / "data" / "samples" / "corpus-v1-sample.jsonl"
    config = AgentRLConfig(output_dir=str(tmp_path), mode="sim", world_model="mock",
                           world_model_retrieve=[str(samples)])
    wm = simulator(config)
    assert isinstance(wm.retriever, TransitionIndex) and "mcp" in wm.retriever.parts
    assert simulator(AgentRLConfig(output_dir=str(tmp_path), mode="sim", world_model="mock")).retriever is None
    assert simulator(AgentRLConfig(output_dir=str(tmp_path), mode="real")) is None


def test_a_page_reward_is_refused_outside_the_simulator_and_an_unknown_reward_named(tmp_path):
    """``reward: page`` pays what the simulated page said: in the real engine that is the gold row's own check."""
    from lwm.agent.train import AgentRLConfig, train_agent

    with pytest.raises(ValueError, match="page with mode: sim"):
        train_agent(AgentRLConfig(output_dir=str(tmp_path), mode="real", reward="page"))
    with pytest.raises(ValueError, match="'judge'"):
        train_agent(AgentRLConfig(output_dir=str(tmp_path), mode="sim", reward="judge", world_model="mock"))
