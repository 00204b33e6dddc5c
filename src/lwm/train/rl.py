"""Stage 3, RL: GRPO (TRL) rewarded by simulation fidelity.

The reward is the hybrid the reference system uses: the benchmark's rule metrics (total, mapped to 0-1)
weighted by ``rule_weight``, plus optionally an LLM judge's rubric score weighted by ``judge_weight``.
Rewards are plain functions ``(completions, **columns) -> list[float]``, as TRL expects.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lwm.bench.data import BenchSample
from lwm.bench.judge import llm_verdict
from lwm.bench.rules import rule_scores
from lwm.parsing import parse_answer
from lwm.train.common import load_model, lora_config, train_and_save
from lwm.train.config import RLStageConfig

log = logging.getLogger(__name__)


def _text(completion: Any) -> str:
    if isinstance(completion, list):  # conversational: [{"role": "assistant", "content": ...}]
        return "".join(m.get("content", "") for m in completion if isinstance(m, dict))
    return str(completion)


def rule_reward(completions: list[Any], reference: list[str], history: list[str], **_: Any) -> list[float]:
    """Rule-metric total of each parsed completion against the real observation, on a 0-1 scale."""
    return [(rule_scores(parse_answer(_text(c)).content, ref, hist)["total_score"] - 1) / 4
            for c, ref, hist in zip(completions, reference, history, strict=True)]


def sample_from_prompt(messages: list[dict[str, str]], reference: str, domain: str, row_id: str = "rl") -> BenchSample:
    """An RL row's prompt (system, earlier turns, action) as the benchmark sample the judge reads."""
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    body = messages[1:] if system else messages
    users = [m["content"] for m in body if m["role"] == "user"]
    answers = [m["content"] for m in body if m["role"] == "assistant"]
    return BenchSample(task=domain, id=row_id, prompt=users, response=[*answers, reference],
                       current_prompt=users[-1] if users else "", system_str=system, turn_idx=len(users))


def judge_reward_for(spec: str, concurrency: int = 8, retries: int = 3,
                     prompts_dir: str | None = None) -> Callable[..., list[float]]:
    """A TRL reward function asking the LLM judge ``spec`` for its rubric total (1-5, mapped to 0-1).

    A completion the judge fails to score (after ``retries``) gets 0 and is counted in the log, so one bad
    judge answer neither stops training nor rewards the policy."""
    from lwm.backends import load_backend
    from lwm.worldmodel import run_sync

    backend = load_backend(spec)

    async def score(limit: asyncio.Semaphore, prompt: list[dict[str, str]], completion: Any, reference: str,
                    domain: str) -> float:
        async with limit:
            verdict = await llm_verdict(sample_from_prompt(prompt, reference, domain),
                                        parse_answer(_text(completion)).content, backend, prompts_dir, retries)
        if verdict["failed"]:
            log.warning("judge reward: %s", verdict["error_message"])
            return 0.0
        return (float(verdict["total_score"]) - 1) / 4

    def judge_reward(prompts: list[Any], completions: list[Any], reference: list[str], domain: list[str],
                     **_: Any) -> list[float]:
        async def every() -> list[float]:
            limit = asyncio.Semaphore(concurrency)  # made in the loop that uses it
            return list(await asyncio.gather(*(score(limit, p, c, r, d) for p, c, r, d in
                                               zip(prompts, completions, reference, domain, strict=True))))
        return run_sync(every())

    return judge_reward


def train_rl(config: RLStageConfig) -> dict[str, Any]:
    from datasets import load_dataset
    from trl import GRPOConfig, GRPOTrainer

    if config.judge_weight and not config.judge_model:
        raise ValueError("judge_weight is set but no judge_model is given")
    rewards: list[Callable[..., list[float]]] = [rule_reward]
    weights = [config.rule_weight]
    if config.judge_weight:
        rewards.append(judge_reward_for(config.judge_model or ""))
        weights.append(config.judge_weight)
    model, tokenizer = load_model(config.model, config.seed)
    dataset = load_dataset("json", data_files=config.data, split="train").select_columns(
        ["prompt", "reference", "history", "domain"])
    output_dir = Path(config.output_dir)
    args = GRPOConfig(
        output_dir=str(output_dir), max_steps=config.max_steps, per_device_train_batch_size=config.batch_size,
        num_generations=config.num_generations, max_completion_length=config.max_completion_length,
        learning_rate=config.learning_rate, seed=config.seed, save_steps=config.save_steps,
        logging_steps=config.logging_steps, report_to=[], use_cpu=True, bf16=False, fp16=False,
        reward_weights=weights, save_total_limit=2,
        gradient_checkpointing=config.gradient_checkpointing, dataloader_num_workers=0,
    )
    trainer = GRPOTrainer(model=model, reward_funcs=rewards, args=args, train_dataset=dataset,
                          processing_class=tokenizer, peft_config=lora_config(config, model))
    return train_and_save(trainer, tokenizer, output_dir, config.resume)
