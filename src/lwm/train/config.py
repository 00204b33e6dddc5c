"""Stage configs: one self-contained, documented dataclass per stage, loadable from YAML or JSON."""

from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class SFTStageConfig:
    """Supervised fine-tuning on next-observation prediction (rows from ``lwm data build --stage sft``).

    The same config serves continual pre-training (``lwm train cpt``) on ``--stage cpt`` rows ('text').
    """

    data: str = field(metadata={"help": "JSONL from lwm data build: prompt/completion (sft) or 'text' (cpt) rows."})
    output_dir: str = field(metadata={"help": "Checkpoints, logs and the final model or adapter go here."})
    model: str = field(default="smollm2", metadata={
        "help": "Base model: 'smollm2' (the packaged GGUF, converted once and cached), a local HF folder, or an "
                "earlier stage's LoRA folder (output_dir/final), whose adapter then keeps training."})
    lora: bool = field(default=True, metadata={"help": "Train a LoRA adapter (peft) instead of all weights."})
    lora_r: int = field(default=8, metadata={"help": "LoRA rank: small keeps the adapter small."})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA scaling."})
    lora_target_modules: list[str] = field(default_factory=lambda: ["q_proj", "v_proj"], metadata={
        "help": "Modules that get adapters; few modules keep the adapter small."})
    max_steps: int = field(default=100, metadata={"help": "Optimizer steps."})
    batch_size: int = field(default=4, metadata={"help": "Per-device batch size."})
    learning_rate: float = field(default=2e-4, metadata={"help": "Peak learning rate."})
    gradient_checkpointing: bool = field(default=False, metadata={
        "help": "Recompute activations in the backward pass: less memory, ~30% slower (TRL's default is on)."})
    max_length: int = field(default=1024, metadata={"help": "Tokens per sample; longer ones are truncated."})
    seed: int = field(default=0, metadata={"help": "Seed for data order and initialisation."})
    save_steps: int = field(default=50, metadata={"help": "Checkpoint every N steps (for resuming)."})
    logging_steps: int = field(default=5, metadata={"help": "Log loss every N steps."})
    resume: bool = field(default=True, metadata={"help": "Resume from the last checkpoint in output_dir."})


def load_config(cls: type[T], path: str | Path, **overrides: Any) -> T:
    """A stage config from YAML or JSON, with ``key=value`` overrides; unknown keys are an error."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".yaml", ".yml"):
        import yaml

        data = yaml.safe_load(text) or {}
    else:
        data = json.loads(text)
    data.update(overrides)
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"{path}: unknown config fields {sorted(unknown)}; known: {sorted(known)}")
    missing = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING  # type: ignore
               and f.name not in data]
    if missing:
        raise ValueError(f"{path}: missing required fields {missing}")
    return cls(**data)


@dataclass
class RLStageConfig:
    """RL for simulation fidelity with TRL's GRPOTrainer; the reward is the benchmark's rule metrics."""

    data: str = field(metadata={"help": "RL JSONL (lwm data build --stage rl): prompt, reference, history."})
    output_dir: str = field(metadata={"help": "Checkpoints, logs and the final model or adapter go here."})
    model: str = field(default="smollm2", metadata={
        "help": "Base or SFT model: 'smollm2', a local HF folder, or the SFT stage's LoRA folder (output_dir/final), "
                "whose adapter then keeps training."})
    lora: bool = field(default=True, metadata={"help": "Train a LoRA adapter instead of all weights."})
    lora_r: int = field(default=8, metadata={"help": "LoRA rank."})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA scaling."})
    lora_target_modules: list[str] = field(default_factory=lambda: ["q_proj", "v_proj"], metadata={
        "help": "Modules that get adapters."})
    max_steps: int = field(default=50, metadata={"help": "Optimizer steps."})
    batch_size: int = field(default=4, metadata={"help": "Prompts x generations per device batch (a multiple "
                                                          "of num_generations)."})
    num_generations: int = field(default=4, metadata={"help": "Completions sampled per prompt (the GRPO group)."})
    max_completion_length: int = field(default=64, metadata={"help": "Tokens per sampled completion."})
    learning_rate: float = field(default=1e-5, metadata={"help": "Peak learning rate."})
    gradient_checkpointing: bool = field(default=False, metadata={
        "help": "Recompute activations in the backward pass: less memory, ~30% slower (TRL's default is on)."})
    rule_weight: float = field(default=1.0, metadata={"help": "Weight of the rule-metric reward (0-1 scale)."})
    judge_weight: float = field(default=0.0, metadata={"help": "Weight of an LLM judge's rubric reward "
                                                               "(needs judge_model)."})
    judge_model: str | None = field(default=None, metadata={"help": "Model spec of the LLM judge, if any."})
    seed: int = field(default=0, metadata={"help": "Seed."})
    save_steps: int = field(default=25, metadata={"help": "Checkpoint every N steps."})
    logging_steps: int = field(default=5, metadata={"help": "Log every N steps."})
    resume: bool = field(default=True, metadata={"help": "Resume from the last checkpoint in output_dir."})
