"""Stage configs: lwm's own fields (data, model, LoRA, rewards) in a documented dataclass per stage,
and every trainer setting in TRL's own config class (``SFTConfig``, ``GRPOConfig``), parsed by TRL.

A YAML or JSON config is flat: keys lwm knows go to the dataclass, any other key must be a field of the
stage's TRL config (``max_steps``, ``per_device_train_batch_size``, ``learning_rate``, ``warmup_ratio`` ...)
and is checked by TRL's own parser, so every TRL option works and a misspelt one is named.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, TypeVar

T = TypeVar("T")


@dataclass(kw_only=True)
class StageConfig:
    data: str = field(default="", metadata={"help": "JSONL from lwm data build for this stage (agent RL: unused, "
                                                    "its tasks are its data)."})
    output_dir: str = field(metadata={"help": "Checkpoints, logs and the final model or adapter go here."})
    model: str = field(default="smollm2", metadata={
        "help": "Base model: 'smollm2' (the packaged GGUF, converted once and cached), a local HF folder, or an "
                "earlier stage's LoRA folder (output_dir/final), whose adapter then keeps training."})
    lora: bool = field(default=True, metadata={"help": "Train a LoRA adapter (peft) instead of all weights."})
    lora_r: int = field(default=8, metadata={"help": "LoRA rank: small keeps the adapter small."})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA scaling."})
    lora_target_modules: list[str] = field(default_factory=lambda: ["q_proj", "v_proj"], metadata={
        "help": "Modules that get adapters; few modules keep the adapter small."})
    resume: bool = field(default=True, metadata={"help": "Resume from the last checkpoint in output_dir."})
    max_minutes: float | None = field(default=None, metadata={
        "help": "Stop (and save a checkpoint) after this many minutes of training; a rerun resumes. Long runs "
                "in pieces that each end inside a session, or a GPU lease."})
    trainer: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "Fields of the stage's TRL config (SFTConfig / GRPOConfig), over lwm's defaults for it."})

    trl_defaults: ClassVar[dict[str, Any]] = {}
    trl_class: ClassVar[str] = ""
    needs_data: ClassVar[bool] = True

    def trl_config_class(self) -> type:
        import trl

        return getattr(trl, self.trl_class)

    def trl_args(self, **fixed: Any) -> Any:
        """The TRL config: lwm's defaults, then this config's ``trainer`` fields, then ``fixed``; TRL's
        parser rejects any field it does not know."""
        from transformers import HfArgumentParser

        from lwm.train.device import fit_field_names, trainer_defaults

        cls = self.trl_config_class()
        values = {**trainer_defaults(), **fit_field_names(self.trl_defaults, cls), **fit_field_names(self.trainer, cls),
                  "output_dir": self.output_dir, **fixed}
        (args,) = HfArgumentParser(cls).parse_dict(values, allow_extra_keys=False)
        return args

    @property
    def seed(self) -> int:
        return int(self.trainer.get("seed", self.trl_defaults.get("seed", 0)))


@dataclass(kw_only=True)
class SFTStageConfig(StageConfig):
    """Supervised fine-tuning on next-observation prediction (rows from ``lwm data build --stage sft``).

    The same config serves continual pre-training (``lwm train cpt``) on ``--stage cpt`` rows ('text')."""

    trl_class: ClassVar[str] = "SFTConfig"
    trl_defaults: ClassVar[dict[str, Any]] = {
        "max_steps": 100, "per_device_train_batch_size": 4, "learning_rate": 2e-4, "max_length": 1024, "seed": 0,
        "save_steps": 50, "logging_steps": 5,
        "activation_checkpointing": False}  # TRL's default is on: less memory, ~30% slower on CPU


@dataclass(kw_only=True)
class RLStageConfig(StageConfig):
    """RL for simulation fidelity with TRL's GRPOTrainer; the reward is the benchmark's rule metrics."""

    rule_weight: float = field(default=1.0, metadata={"help": "Weight of the rule-metric reward (0-1 scale)."})
    judge_weight: float = field(default=0.0, metadata={"help": "Weight of an LLM judge's rubric reward "
                                                               "(needs judge_model)."})
    judge_model: str | None = field(default=None, metadata={"help": "Model spec of the LLM judge, if any."})

    trl_class: ClassVar[str] = "GRPOConfig"
    trl_defaults: ClassVar[dict[str, Any]] = {
        "max_steps": 50, "per_device_train_batch_size": 4, "num_generations": 4, "max_completion_length": 64,
        "learning_rate": 1e-5, "seed": 0, "save_steps": 25, "logging_steps": 5, "activation_checkpointing": False}


def load_config(cls: type[T], path: str | Path, **overrides: Any) -> T:
    """A stage config from YAML or JSON, with ``key=value`` overrides; lwm's keys fill the dataclass, the
    rest go to TRL's config class, and TRL names any it does not know."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".yaml", ".yml"):
        import yaml

        data = yaml.safe_load(text) or {}
    else:
        data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a config is a mapping of field: value")
    data.update(overrides)
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    missing = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING  # type: ignore
               and f.name not in data]
    if getattr(cls, "needs_data", False) and "data" not in data:
        missing.insert(0, "data")
    if missing:
        raise ValueError(f"{path}: missing required fields {missing}")
    trainer = {**data.pop("trainer", {}), **{k: data.pop(k) for k in list(data) if k not in known}}
    config = cls(**data, trainer=trainer)
    try:
        config.trl_args()  # type: ignore[attr-defined]
    except ValueError as exc:  # HfArgumentParser: "Some keys are not used by the HfArgumentParser: [...]"
        raise ValueError(f"{path}: {exc} (neither {cls.trl_class} fields nor lwm's: "  # type: ignore[attr-defined]
                         f"{sorted(known - {'trainer'})})") from None
    return config
