"""Stages 1 and 2, CPT and SFT, with TRL's SFTTrainer, LoRA (peft) or full fine-tuning.

SFT learns next-observation prediction on prompt-completion chat rows; CPT continues pre-training on packed
trajectory text ('text').

fp32 master weights throughout (pure bf16 did not learn on CPU in the trials the issue reports).
Checkpoints every ``save_steps``; a rerun resumes from the last one in ``output_dir``.
"""

from __future__ import annotations

from typing import Any

from lwm.train.common import load_model, lora_config, train_and_save
from lwm.train.config import SFTStageConfig


def train_sft(config: SFTStageConfig, column: str = "completion") -> dict[str, Any]:
    """Train, save the final model or adapter to ``output_dir/final``, return the training metrics.

    ``column`` is 'completion' for SFT (prompt-completion rows: loss on the observation only) or 'text'
    for CPT (packed plain text: loss everywhere)."""
    from datasets import load_dataset
    from trl import SFTTrainer

    model, tokenizer = load_model(config.model, config.seed)
    dataset = load_dataset("json", data_files=config.data, split="train")
    if column not in dataset.column_names:
        raise ValueError(f"{config.data}: no '{column}' column; build it with lwm data build "
                         f"--stage {'sft' if column == 'completion' else 'cpt'}")
    dataset = dataset.select_columns(["prompt", column] if column == "completion" else [column])
    args = config.trl_args(assistant_only_loss=False, completion_only_loss=True, packing=column == "text",
                           dataset_text_field="text")
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                         peft_config=lora_config(config, model))
    if len(trainer.train_dataset) == 0:
        raise ValueError(f"{config.data}: every row lost its answer to truncation at max_length={args.max_length}; "
                         "raise max_length or build the rows with lwm data build --max-tokens")
    return train_and_save(trainer, tokenizer, config)
