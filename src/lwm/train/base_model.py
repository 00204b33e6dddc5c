"""The base model without a hub: the packaged SmolLM2 GGUF, converted once to a Hugging Face folder.

transformers loads a GGUF with ``gguf_file=`` (dequantized to fp32) but then refuses to save or train
it while its quantizer marks are set; clearing them gives an ordinary model, saved as safetensors in the
cache so later loads take a fraction of a second instead of many.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

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
    if _current(folder):
        return folder
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model.hf_quantizer = None  # the marks that block saving and training a dequantized GGUF model
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    _special_tokens_as_in(gguf, model, tokenizer)
    staging = folder.with_name(folder.name + f".{os.getpid()}.tmp")
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    if (staging / "config.json").is_file():  # not on a rank that transformers does not save from
        (staging / CONVERTED).write_text(json.dumps({"format": CONVERSION_FORMAT}), encoding="utf-8")
    return _publish(staging, folder, CONVERTED)


CONVERTED = "lwm-base.json"
CONVERSION_FORMAT = 2
"""2: special tokens as the GGUF names them (transformers 5.17 made <|im_start|> the end of a turn)."""


def _current(folder: Path) -> bool:
    try:
        return json.loads((folder / CONVERTED).read_text(encoding="utf-8")).get("format") == CONVERSION_FORMAT
    except (OSError, ValueError):
        return False


def _special_tokens_as_in(gguf: Path, model: Any, tokenizer: Any) -> None:
    """End-of-text, beginning and padding tokens set from the GGUF's own ids: transformers' GGUF conversion
    got them wrong in some versions, and a wrong end token makes replies run on past their turn."""
    from gguf import GGUFReader

    fields = GGUFReader(str(gguf)).fields
    for role in ("eos", "bos", "pad"):
        key = f"tokenizer.ggml.{'padding' if role == 'pad' else role}_token_id"
        if key not in fields:
            continue
        field = fields[key]
        token_id = int(field.parts[field.data[0]][0])
        setattr(tokenizer, f"{role}_token", tokenizer.convert_ids_to_tokens(token_id))
        for config in (model.config, getattr(model, "generation_config", None)):
            if config is not None:
                setattr(config, f"{role}_token_id", token_id)


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
    return _publish(staging, folder, "adapter_config.json")


def _publish(staging: Path, folder: Path, marker: str, wait_s: float = 1800) -> Path:
    """``staging`` renamed to ``folder``. Under ``accelerate launch`` every rank converts but transformers
    saves weights from rank 0 only: a rank whose copy lacks ``marker`` waits for rank 0's, and when another
    rank published first, its copy is kept and ours is dropped."""
    import shutil
    import time

    if not (staging / marker).is_file():
        shutil.rmtree(staging, ignore_errors=True)
        deadline = time.monotonic() + wait_s
        while not (folder / marker).is_file():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{folder}: not written by the main process within {wait_s:.0f} s")
            time.sleep(0.5)
        return folder
    if folder.is_dir() and not (folder / marker).is_file():  # a broken copy (an older lwm's): replaced
        shutil.rmtree(folder, ignore_errors=True)
    try:
        staging.rename(folder)
    except OSError:
        if not (folder / marker).is_file():
            raise
        shutil.rmtree(staging, ignore_errors=True)
    return folder
