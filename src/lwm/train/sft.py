"""Stages 1 and 2, CPT and SFT, with TRL's SFTTrainer, LoRA (peft) or full fine-tuning.

SFT learns next-observation prediction on chat rows ('messages'); CPT continues pre-training on packed
trajectory text ('text').

fp32 master weights throughout (pure bf16 did not learn on CPU in the trials the issue reports).
Checkpoints every ``save_steps``; a rerun resumes from the last one in ``output_dir``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lwm.train.base import base_model_dir
from lwm.train.config import SFTStageConfig


def _last_checkpoint(output_dir: Path) -> str | None:
    checkpoints = sorted(output_dir.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
    return str(checkpoints[-1]) if checkpoints else None


def train_sft(config: SFTStageConfig, column: str = "messages") -> dict[str, Any]:
    """Train, save the final model or adapter to ``output_dir/final``, return the training metrics."""
    import torch
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    torch.manual_seed(config.seed)
    model_dir = base_model_dir(config.model)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    dataset = load_dataset("json", data_files=config.data, split="train")
    if column not in dataset.column_names:
        raise ValueError(f"{config.data}: no '{column}' column; build it with lwm data build "
                         f"--stage {'sft' if column == 'messages' else 'cpt'}")
    dataset = dataset.select_columns([column])
    peft_config = None
    if config.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha,
                                 target_modules=config.lora_target_modules, task_type="CAUSAL_LM")
    output_dir = Path(config.output_dir)
    args = SFTConfig(
        output_dir=str(output_dir), max_steps=config.max_steps, per_device_train_batch_size=config.batch_size,
        learning_rate=config.learning_rate, max_length=config.max_length, seed=config.seed,
        save_steps=config.save_steps, logging_steps=config.logging_steps, report_to=[], use_cpu=True,
        bf16=False, fp16=False, assistant_only_loss=False, completion_only_loss=None, save_total_limit=2,
        dataloader_num_workers=0, packing=column == "text", dataset_text_field="text",
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                         peft_config=peft_config)
    resume = _last_checkpoint(output_dir) if config.resume else None
    result = trainer.train(resume_from_checkpoint=resume)
    trainer.save_model(str(output_dir / "final"))
    tokenizer.save_pretrained(str(output_dir / "final"))
    return {**result.metrics, "resumed_from": resume, "log": trainer.state.log_history}
