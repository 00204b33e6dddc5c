"""lwm's training and Sim RL on the best device here: SFT tokens/s, agent eval episodes/s and generated
tokens/s, agent GRPO seconds per step, peak GPU memory — one script that fits 8 minutes on one GPU.

The model is SmolLM2-135M's architecture. GPU machines are often offline and take a small upload, so the
packaged GGUF (94 MB) need not travel: ``--prepare DIR`` (run where lwm is installed) writes the model's
config and tokenizer (no weights) and SFT rows built from the committed corpus sample; ``--from DIR`` on the
GPU machine builds a random-initialised model of that architecture from them (same speed as the trained
weights) and runs every part through lwm's own code (``train_sft``, ``run_episodes``, ``train_agent``). The
Sim RL world model is ``mock`` there (no llama.cpp): the figures are the policy's and the trainer's cost.

    python benchmarks/gpu_check.py --cpu                 # tiny sizes on a CPU, end to end (a smoke run)
    python benchmarks/gpu_check.py --prepare .gpu        # here: config, tokenizer, rows
    python benchmarks/gpu_check.py --from .gpu --json $OUT/gpu_check.json      # on the GPU machine
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

SIZES = {  # name: (SFT batch, SFT length, SFT steps, eval episodes, GRPO batch, GRPO generations, GRPO steps)
    "gpu": dict(sft_batch=16, sft_length=1024, sft_steps=30, eval_episodes=128, grpo_batch=64, grpo_generations=8,
                grpo_steps=3, reply_tokens=96, episode_steps=3),
    "cpu": dict(sft_batch=2, sft_length=1024, sft_steps=2, eval_episodes=4, grpo_batch=4, grpo_generations=2,
                grpo_steps=1, reply_tokens=16, episode_steps=2),
}
TINY = {"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16}
"""The --cpu model: the same family and tokenizer, small enough to run in a test suite's time."""


def prepare(folder: Path, rows: int = 256) -> None:
    """Model config + tokenizer of the packaged base (no weights) and SFT rows, into ``folder``."""
    from transformers import AutoConfig, AutoTokenizer

    from lwm.data.build import build
    from lwm.data.store import read_trajectories
    from lwm.train.base_model import base_model_dir

    base = base_model_dir("smollm2")
    folder.mkdir(parents=True, exist_ok=True)
    AutoConfig.from_pretrained(base).save_pretrained(folder / "model")
    AutoTokenizer.from_pretrained(base).save_pretrained(folder / "model")
    trajectories = list(read_trajectories(ROOT / "data/samples/corpus-v1-sample.jsonl"))
    build("sft", trajectories, folder / "sft.jsonl", compact=True, max_tokens=1024)
    lines = (folder / "sft.jsonl").read_text(encoding="utf-8").splitlines()
    (folder / "sft.jsonl").write_text("\n".join((lines * (rows // max(len(lines), 1) + 1))[:rows]) + "\n",
                                      encoding="utf-8")


def random_model(stub: Path, out: Path, tiny: bool) -> Path:
    """A random-initialised model of the stub's architecture, saved as an HF folder lwm's loaders take."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    config = AutoConfig.from_pretrained(stub / "model")
    if tiny:
        for key, value in TINY.items():
            setattr(config, key, value)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(stub / "model").save_pretrained(out)
    return out


def peak_memory_gb() -> float | None:
    import torch

    return torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else None


def reset_peak() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def check_sft(model_dir: Path, rows: Path, work: Path, size: dict[str, int]) -> dict[str, Any]:
    from lwm.train.config import SFTStageConfig
    from lwm.train.sft import train_sft

    config = SFTStageConfig(data=str(rows), output_dir=str(work / "sft"), model=str(model_dir), resume=False,
                            trainer={"max_steps": size["sft_steps"], "per_device_train_batch_size": size["sft_batch"],
                                     "max_length": size["sft_length"], "save_steps": 10_000, "logging_steps": 1})
    reset_peak()
    metrics = train_sft(config)
    tokens = max(e.get("num_tokens", 0) for e in metrics["log"])
    # Steady state: the first steps carry compilation and allocator warm-up, so also time from step 2 on.
    return {"sft_steps": size["sft_steps"], "sft_tokens": tokens, "sft_seconds": metrics["train_runtime"],
            "sft_tokens_per_s": tokens / metrics["train_runtime"], "sft_peak_gb": peak_memory_gb()}


class Counting:
    """A policy wrapper that counts generated tokens (the policy's own tokenizer) and wall time in ``act``."""

    def __init__(self, policy: Any):
        self.policy, self.name, self.tokens, self.seconds = policy, policy.name, 0, 0.0

    def act(self, episodes: Any) -> list[str]:
        started = time.perf_counter()
        replies = self.policy.act(episodes)
        self.seconds += time.perf_counter() - started
        self.tokens += sum(len(self.policy.tokenizer(r, add_special_tokens=False)["input_ids"]) for r in replies)
        return replies


def check_eval(model_dir: Path, size: dict[str, int]) -> dict[str, Any]:
    from lwm.model_options import world_model
    from lwm.rollout.loop import run_episodes
    from lwm.rollout.policies import LocalPolicy
    from lwm.rollout.tasks import tasks

    chosen = tasks("search", "train")
    chosen = (chosen * (size["eval_episodes"] // len(chosen) + 1))[: size["eval_episodes"]]
    policy = Counting(LocalPolicy.load(str(model_dir), max_new_tokens=size["reply_tokens"], temperature=1.0))
    device = str(policy.policy.model.device)
    reset_peak()
    started = time.perf_counter()
    episodes = run_episodes(chosen, policy, "sim", world_model=world_model("mock"),
                            max_steps=size["episode_steps"], seed=0)
    seconds = time.perf_counter() - started
    return {"eval_device": device, "eval_episodes": len(episodes), "eval_seconds": seconds,
            "eval_episodes_per_s": len(episodes) / seconds, "eval_generated_tokens": policy.tokens,
            "eval_generated_tokens_per_s": policy.tokens / max(policy.seconds, 1e-9),
            "eval_policy_share": policy.seconds / seconds, "eval_peak_gb": peak_memory_gb()}


def check_grpo(model_dir: Path, work: Path, size: dict[str, int]) -> dict[str, Any]:
    from lwm.agent.train import AgentRLConfig, train_agent

    config = AgentRLConfig(output_dir=str(work / "grpo"), model=str(model_dir), mode="sim", world_model="mock",
                           domain="search", episode_steps=size["episode_steps"], reply_tokens=size["reply_tokens"],
                           record=False, resume=False,
                           trainer={"max_steps": size["grpo_steps"], "per_device_train_batch_size": size["grpo_batch"],
                                    "num_generations": size["grpo_generations"], "save_steps": 10_000,
                                    "max_completion_length": 512})
    reset_peak()
    metrics = train_agent(config)
    steps = [e for e in metrics["log"] if "loss" in e or "reward" in e]
    return {"grpo_steps": size["grpo_steps"], "grpo_episodes_per_step": size["grpo_batch"],
            "grpo_seconds": metrics["train_runtime"], "grpo_s_per_step": metrics["train_runtime"] / size["grpo_steps"],
            "grpo_logged_steps": len(steps), "grpo_peak_gb": peak_memory_gb()}


def environment() -> dict[str, Any]:
    import torch
    import transformers
    import trl

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
            "trl": trl.__version__, "gpu": gpu, "cpu_count": os.cpu_count()}


def report(results: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"gpu_check on {results.get('gpu') or 'CPU'} ({results['size']} sizes)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in results.items():
        table.add_row(key, f"{value:,.2f}" if isinstance(value, float) else str(value))
    Console(width=120).print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu", action="store_true", help="tiny sizes on the CPU, prepared here, end to end")
    parser.add_argument("--prepare", type=Path, help="write config, tokenizer and rows to this folder and stop")
    parser.add_argument("--from", dest="source", type=Path, help="a folder made by --prepare")
    parser.add_argument("--only", nargs="*", default=["sft", "eval", "grpo"], choices=["sft", "eval", "grpo"])
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if args.prepare:
        prepare(args.prepare)
        print(f"prepared {args.prepare}")
        return
    if args.cpu:
        os.environ["LWM_DEVICE"] = "cpu"
    size_name = "cpu" if args.cpu else "gpu"
    size = SIZES[size_name]
    work = Path(tempfile.mkdtemp(prefix="lwm-gpu-check-"))
    try:
        stub = args.source
        if stub is None:
            stub = work / "stub"
            prepare(stub, rows=16)
        model_dir = random_model(stub, work / "model", tiny=args.cpu)
        results: dict[str, Any] = {"size": size_name, **environment()}
        checks = {"sft": lambda: check_sft(model_dir, stub / "sft.jsonl", work, size),
                  "eval": lambda: check_eval(model_dir, size), "grpo": lambda: check_grpo(model_dir, work, size)}
        for name in args.only:
            started = time.perf_counter()
            results.update(checks[name]())
            results[f"{name}_wall_s"] = time.perf_counter() - started
            print(f"gpu_check: {name} done in {results[f'{name}_wall_s']:.1f} s", flush=True)
        report(results)
        if args.json:
            args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
