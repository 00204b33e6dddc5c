"""Stage 3, RL: GRPO (TRL) rewarded by simulation fidelity.

The reward is the hybrid the reference system uses: the benchmark's rule metrics (total, mapped to 0-1)
weighted by ``rule_weight``, plus optionally an LLM judge's rubric score weighted by ``judge_weight``.
Rewards are plain functions ``(completions, **columns) -> list[float]``, as TRL expects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lwm.bench.rules import rule_scores
from lwm.parsing import parse_answer
from lwm.train.common import load_model, lora_config, train_and_save
from lwm.train.config import RLStageConfig


def _text(completion: Any) -> str:
    if isinstance(completion, list):  # conversational: [{"role": "assistant", "content": ...}]
        return "".join(m.get("content", "") for m in completion if isinstance(m, dict))
    return str(completion)


def rule_reward(completions: list[Any], reference: list[str], history: list[str], **_: Any) -> list[float]:
    """Rule-metric total of each parsed completion against the real observation, on a 0-1 scale."""
    return [(rule_scores(parse_answer(_text(c)).content, ref, hist)["total_score"] - 1) / 4
            for c, ref, hist in zip(completions, reference, history, strict=True)]


def train_rl(config: RLStageConfig) -> dict[str, Any]:
    from datasets import load_dataset
    from trl import GRPOConfig, GRPOTrainer

    if config.judge_weight and not config.judge_model:
        raise ValueError("judge_weight is set but no judge_model is given")
    if config.judge_weight:
        raise NotImplementedError("the LLM-judge part of the hybrid reward is not wired in yet; use rule_weight")
    model, tokenizer = load_model(config.model, config.seed)
    dataset = load_dataset("json", data_files=config.data, split="train").select_columns(
        ["prompt", "reference", "history"])
    output_dir = Path(config.output_dir)
    args = GRPOConfig(
        output_dir=str(output_dir), max_steps=config.max_steps, per_device_train_batch_size=config.batch_size,
        num_generations=config.num_generations, max_completion_length=config.max_completion_length,
        learning_rate=config.learning_rate, seed=config.seed, save_steps=config.save_steps,
        logging_steps=config.logging_steps, report_to=[], use_cpu=True, bf16=False, fp16=False,
        reward_weights=[config.rule_weight], save_total_limit=2, dataloader_num_workers=0,
    )
    trainer = GRPOTrainer(model=model, reward_funcs=[rule_reward], args=args, train_dataset=dataset,
                          processing_class=tokenizer, peft_config=lora_config(config))
    return train_and_save(trainer, tokenizer, output_dir, config.resume)
