"""Where training and in-process generation run: the best device there is (CUDA, then CPU), and the
trainer settings that go with it, detected from the installed versions rather than pinned.

On CPU lwm trains in fp32 (pure bf16 did not learn there); on a CUDA GPU the fp32 master weights train
under bf16 autocast where the card supports it, which is how TRL and transformers expect a GPU run.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

CHECKPOINTING = ("activation_checkpointing", "gradient_checkpointing")
"""Two spellings of one TrainingArguments field: newer transformers renamed it, 5.x images still carry the old."""


def best_device() -> str:
    """``cuda`` when torch sees a GPU (and ``LWM_DEVICE`` does not say otherwise), else ``cpu``."""
    wanted = os.environ.get("LWM_DEVICE")
    if wanted:
        return wanted
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def trainer_defaults(device: str | None = None) -> dict[str, Any]:
    """What lwm always sets in a TRL config for ``device``: no trackers, two checkpoints, and the precision."""
    device = device or best_device()
    common = {"report_to": [], "dataloader_num_workers": 0, "save_total_limit": 2}
    if device.startswith("cuda"):
        import torch

        bf16 = torch.cuda.is_bf16_supported()
        return {**common, "use_cpu": False, "bf16": bf16, "fp16": not bf16}
    return {**common, "use_cpu": True, "bf16": False, "fp16": False}


def fit_field_names(values: dict[str, Any], config_class: type) -> dict[str, Any]:
    """``values`` with the checkpointing switch spelt as ``config_class`` spells it (either spelling in)."""
    names = {f.name for f in dataclasses.fields(config_class)}
    have = next((n for n in CHECKPOINTING if n in names), None)
    given = next((n for n in CHECKPOINTING if n in values), None)
    if have is None or given is None or given == have:
        return values
    return {(have if k == given else k): v for k, v in values.items()}


def to_device(model: Any, device: str | None = None) -> Any:
    """``model`` on ``device`` (the best one by default)."""
    return model.to(device or best_device())
