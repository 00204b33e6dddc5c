"""The base model without a hub: the packaged SmolLM2 GGUF, converted once to a Hugging Face folder.

transformers loads a GGUF with ``gguf_file=`` (dequantized to fp32) but then refuses to save or train
it while its quantizer marks are set; clearing them gives an ordinary model, saved as safetensors in the
cache so later loads take a fraction of a second instead of many.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from lwm.backends.embedded import packaged_model_path
from lwm.cache import cache_root


def base_model_dir(name: str = "smollm2", cache_dir: str | Path | None = None) -> Path:
    """A local HF folder for ``name`` (a packaged GGUF, or a path to a .gguf file: how a machine without the
    model package trains on the same weights) or ``name`` itself when it is a folder."""
    if Path(name).is_dir():
        return Path(name)
    gguf = Path(name) if name.endswith(".gguf") and Path(name).is_file() else packaged_model_path(name)
    root = Path(cache_dir) if cache_dir else cache_root()
    folder = root / "base-models" / gguf.stem
    if (folder / "config.json").exists():
        return folder
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model.hf_quantizer = None  # the marks that block saving and training a dequantized GGUF model
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    staging = folder.with_name(folder.name + f".{os.getpid()}.tmp")
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    staging.rename(folder)
    return folder


def packaged_adapter_dir(name: str, cache_dir: str | Path | None = None) -> Path | None:
    """A peft folder for a packaged GGUF adapter (``lwm-mini``), imported once into the cache; None when
    ``name`` is not one. How an agent policy starts from the shipped world model (LWM warm-up)."""
    from lwm.backends.embedded import packaged_adapter

    found = packaged_adapter(name) if not Path(name).exists() else None
    if found is None:
        return None
    base, gguf = found
    digest = hashlib.sha256(gguf.read_bytes()).hexdigest()[:12]
    root = Path(cache_dir) if cache_dir else cache_root()
    folder = root / "adapters" / f"{name.lower()}-{digest}"
    if (folder / "adapter_config.json").exists():
        return folder
    from lwm.train.export import import_adapter

    staging = import_adapter(gguf, folder.with_name(folder.name + f".{os.getpid()}.tmp"), base)
    staging.rename(folder)
    return folder
