"""What every training stage shares: the fp32 base model and tokenizer, the LoRA config, and the
train-resume-save step (rl.py and sft.py differ only in their TRL trainer and data)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from lwm.runfolder import digest, pin
from lwm.train.base_model import base_model_dir, packaged_adapter_dir


def load_model(name: str, seed: int) -> tuple[Any, Any]:
    """(model, tokenizer) in fp32 (pure bf16 did not learn on CPU), with a pad token.

    ``name`` may be an earlier stage's LoRA folder: its base is loaded and the same adapter keeps
    training, so CPT -> SFT -> RL end with one adapter over the original base (one file to ship). It may
    also name a packaged adapter (``lwm-mini``): training then starts from the shipped world model."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    name = str(packaged_adapter_dir(name) or name)  # "lwm-mini": the shipped world model's adapter
    adapter = Path(name) / "adapter_config.json"
    base = name
    if adapter.is_file():
        base = json.loads(adapter.read_text(encoding="utf-8")).get("base_model_name_or_path") or "smollm2"
        base = base if Path(base).is_dir() or base.endswith(".gguf") and Path(base).is_file() else "smollm2"
    model_dir = base_model_dir(base)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    if adapter.is_file():
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, name, is_trainable=True)
    return model, tokenizer


def load_for_inference(name: str, device: str | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) for generation in this process, on ``device`` (the best there is by default):
    a base folder, ``smollm2``, a packaged adapter or a LoRA folder from ``lwm train``. The one loader
    behind ``hf:DIR`` policies and the ``transformers:`` backend."""
    from lwm.train.device import to_device

    model, tokenizer = load_model(name, seed=0)
    model = to_device(model, device)
    model.eval()
    return model, tokenizer


def lora_config(config: Any, model: Any = None) -> Any:
    """A peft LoraConfig from a stage config's lora fields; None for full fine-tuning or when ``model``
    already carries an adapter (from an earlier stage) that keeps training."""
    if not config.lora or hasattr(model, "peft_config"):
        return None
    from peft import LoraConfig

    return LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, target_modules=config.lora_target_modules,
                      task_type="CAUSAL_LM")


def last_checkpoint(output_dir: Path) -> str | None:
    """The newest complete checkpoint: one a kill cut short (no ``trainer_state.json``, which the trainer
    writes last) is passed over, so the run resumes from the one before it."""
    checkpoints = sorted((p for p in output_dir.glob("checkpoint-*") if (p / "trainer_state.json").is_file()),
                         key=lambda p: int(p.name.split("-")[-1]))
    return str(checkpoints[-1]) if checkpoints else None


GROWABLE = ("max_steps", "num_train_epochs", "save_steps", "logging_steps", "save_total_limit", "max_minutes")
"""Fields a resumed run may change: training longer, or checkpointing and logging differently."""


def pin_training(config: Any) -> str | None:
    """The checkpoint to resume from, if any, after checking that ``config`` is the one its run was started
    with (output_dir/run.json): resuming another model, data or optimiser setup would mix two runs.
    ``resume: false`` starts over, and its settings become the folder's."""
    output_dir = Path(config.output_dir)
    checkpoint = last_checkpoint(output_dir) if config.resume else None
    settings = {k: v for k, v in asdict(config).items() if k not in ("resume", "output_dir", "trainer", *GROWABLE)}
    settings["trainer"] = {k: v for k, v in config.trainer.items() if k not in GROWABLE}
    if config.data and Path(config.data).is_file():
        settings["data_digest"] = digest(Path(config.data))
    pin(output_dir, "train", json.loads(json.dumps(settings, default=str)), has_rows=checkpoint is not None,
        way_out="give another output_dir, or resume: false to start over")
    return checkpoint


def time_limit(minutes: float) -> Any:
    """A TrainerCallback that ends training after ``minutes`` at a step boundary, saving a checkpoint there."""
    import time

    from transformers import TrainerCallback

    class TimeLimit(TrainerCallback):
        def __init__(self) -> None:
            self.deadline = time.monotonic() + minutes * 60

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            if time.monotonic() >= self.deadline:
                control.should_training_stop = True
                control.should_save = True
            return control

    return TimeLimit()


def train_and_save(trainer: Any, tokenizer: Any, config: Any) -> dict[str, Any]:
    """Train (from the last checkpoint when resuming), save to ``output_dir/final``, return the metrics.
    With ``max_minutes`` the run may end early, at a saved checkpoint; ``final`` then holds the model so far
    and ``stopped_early`` says so."""
    output_dir = Path(config.output_dir)
    with trainer.accelerator.main_process_first():  # under accelerate launch: rank 0 records, the others check
        checkpoint = pin_training(config)
    if getattr(config, "max_minutes", None):
        trainer.add_callback(time_limit(config.max_minutes))
    result = trainer.train(resume_from_checkpoint=checkpoint)
    trainer.save_model(str(output_dir / "final"))  # the trainer saves from the main process only
    main = trainer.is_world_process_zero()
    if main:
        tokenizer.save_pretrained(str(output_dir / "final"))
    stopped_early = trainer.state.global_step < trainer.state.max_steps
    return {**result.metrics, "main_process": main, "resumed_from": checkpoint, "stopped_early": stopped_early,
            "global_step": trainer.state.global_step, "log": trainer.state.log_history}
