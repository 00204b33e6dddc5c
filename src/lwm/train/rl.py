"""Stage 3, RL: GRPO (TRL) rewarded by simulation fidelity.

The reward is the hybrid the reference system uses: the benchmark's rule metrics (total, mapped to 0-1)
weighted by ``rule_weight``, plus optionally an LLM judge's rubric score weighted by ``judge_weight``;
both are the benchmark's Scorers reading the row as the benchmark sample of its turn. Rewards are plain
functions ``(completions, **columns) -> list[float]``, as TRL expects.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from lwm.bench.samples import BenchSample
from lwm.bench.scorer import Scorer, load_scorer
from lwm.edits import apply_answer
from lwm.parsing import parse_answer, strip_marker
from lwm.train.common import load_model, lora_config, train_and_save
from lwm.train.config import RLStageConfig
from lwm.worldmodel import run_sync

log = logging.getLogger(__name__)


def _text(completion: Any) -> str:
    if isinstance(completion, list):  # conversational: [{"role": "assistant", "content": ...}]
        return "".join(m.get("content", "") for m in completion if isinstance(m, dict))
    return str(completion)


def sample_from_row(prompt: list[dict[str, str]], history: list[list[str]], reference: str, domain: str,
                    row_id: str = "rl") -> BenchSample:
    """An RL row (prompt, whole history, real observation) as the benchmark sample of that turn, so the
    reward is scored exactly as the benchmark scores the same prediction."""
    system = prompt[0]["content"] if prompt and prompt[0]["role"] == "system" else ""
    current = prompt[-1]["content"] if prompt else ""
    return BenchSample(task=domain, id=row_id, prompt=[u for u, _ in history] + [current],
                       response=[a for _, a in history] + [reference], current_prompt=current, system_str=system,
                       turn_idx=len(history) + 1)


def scorer_reward(scorer: Scorer, concurrency: int = 8) -> Callable[..., list[float]]:
    """A TRL reward function: each parsed completion's verdict by ``scorer`` on a 0-1 scale.

    A completion the scorer fails on gets 0 and is logged, so one bad judge answer neither stops
    training nor rewards the policy."""

    async def score(limit: asyncio.Semaphore, sample: BenchSample, completion: Any) -> float:
        # An edit answer is scored as the whole observation it stands for, as inference would show it.
        history = [strip_marker(a) for a in sample.response[:-1]]
        prediction = apply_answer(parse_answer(_text(completion)).content, history).content
        async with limit:
            verdict = await scorer.score(sample, prediction)
        if verdict.failed:
            log.warning("%s reward: %s", scorer.name, verdict.error_message)
        return verdict.reward

    def reward(prompts: list[Any], completions: list[Any], reference: list[str], history: list[Any],
               domain: list[str], **_: Any) -> list[float]:
        async def every() -> list[float]:
            limit = asyncio.Semaphore(concurrency)  # made in the loop that uses it
            return list(await asyncio.gather(*(score(limit, sample_from_row(p, h, r, d), c) for p, c, r, h, d in
                                               zip(prompts, completions, reference, history, domain, strict=True))))
        return run_sync(every())

    reward.__name__ = f"{scorer.name}_reward"  # TRL logs each reward by its function's name
    return reward


def train_rl(config: RLStageConfig) -> dict[str, Any]:
    from datasets import Value, load_dataset
    from trl import GRPOTrainer

    if config.judge_weight and not config.judge_model:
        raise ValueError("judge_weight is set but no judge_model is given")
    rewards = [scorer_reward(load_scorer("rules"))]
    weights = [config.rule_weight]
    if config.judge_weight:
        rewards.append(scorer_reward(load_scorer(config.judge_model or "")))
        weights.append(config.judge_weight)
    model, tokenizer = load_model(config.model, config.seed)
    dataset = load_dataset("json", data_files=config.data, split="train")
    if isinstance(dataset.features.get("history"), Value):
        raise ValueError(f"{config.data}: built by an older lwm (history as text); rebuild it with lwm data build "
                         "--stage rl")
    dataset = dataset.select_columns(["prompt", "reference", "history", "domain"])
    args = config.trl_args(reward_weights=weights)
    trainer = GRPOTrainer(model=model, reward_funcs=rewards, args=args, train_dataset=dataset,
                          processing_class=tokenizer, peft_config=lora_config(config, model))
    return train_and_save(trainer, tokenizer, config)
