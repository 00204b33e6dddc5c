"""Trained models back to llama.cpp: a LoRA adapter as a GGUF adapter, or a merged model as a GGUF model;
and a GGUF adapter back to a peft folder (``import_adapter``), so a shipped world model can be trained on.

Both are written with the ``gguf`` package, using the base model's own GGUF (the packaged SmolLM2 by
default) as the template: its metadata and tokenizer are copied unchanged, and every tensor keeps its
GGUF name. That is what makes the export exact for the bases we train from, without llama.cpp's
conversion scripts (which are not in the installed wheel). Two details llama.cpp needs:

- llama.cpp stores the Q and K projections with the rows of each head interleaved for its RoPE;
  transformers undoes that when it loads a GGUF, so we redo it here (for a LoRA, on B's rows).
- An adapter GGUF is ``general.type = adapter``, ``adapter.type = lora``, ``adapter.lora.alpha``, and
  tensors ``<base tensor>.lora_a`` (r x in) / ``.lora_b`` (out x r); llama.cpp scales by alpha / r like peft.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from lwm.backends.base import BackendError
from lwm.backends.embedded import resolve_model
from lwm.backends.gguf_merge import QUANT_TYPES, copy_metadata
from lwm.backends.gguf_merge import quantize as _quantize

__all__ = ["QUANT_TYPES", "ExportError", "copy_metadata", "export_adapter", "import_adapter", "quantize"]


class ExportError(ValueError):
    """The model or adapter cannot be exported as asked."""


def _template(base: str) -> Any:
    import gguf

    path = resolve_model(base)
    reader = gguf.GGUFReader(str(path))
    arch = reader.fields["general.architecture"].contents()
    if arch != "llama":
        raise ExportError(f"{path}: only llama-architecture bases are supported (this one is {arch!r})")
    return reader


def _field(reader: Any, key: str) -> Any:
    return reader.fields[key].contents()


def _names(reader: Any) -> dict[str, str]:
    """HF parameter name -> GGUF tensor name, for every tensor of the template."""
    import gguf

    blocks = int(_field(reader, "llama.block_count"))
    mapping = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, blocks)
    hf_names = ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
    for i in range(blocks):
        hf_names += [f"model.layers.{i}.{m}.weight" for m in (
            "input_layernorm", "post_attention_layernorm", "self_attn.q_proj", "self_attn.k_proj",
            "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")]
    present = {t.name for t in reader.tensors}
    names = {hf: mapping.get_name(hf, try_suffixes=(".weight", ".bias")) for hf in hf_names}
    return {hf: name for hf, name in names.items() if name in present}


def _permute(weights: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's row order for a Q or K projection (or a LoRA B feeding one)."""
    return (weights.reshape(heads, 2, weights.shape[0] // heads // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


def _heads(reader: Any, hf_name: str) -> int | None:
    if ".q_proj." in hf_name:
        return int(_field(reader, "llama.attention.head_count"))
    if ".k_proj." in hf_name:
        return int(_field(reader, "llama.attention.head_count_kv"))
    return None


def _write(writer: Any, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def _adapter_tensors(adapter_dir: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    from safetensors.numpy import load_file

    config_path = adapter_dir / "adapter_config.json"
    if not config_path.is_file():
        raise ExportError(f"{adapter_dir}: no adapter_config.json (not a peft LoRA adapter folder)")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    if config.get("peft_type", "LORA") != "LORA" or config.get("use_dora") or config.get("use_rslora"):
        raise ExportError(f"{adapter_dir}: only plain LoRA adapters export (no DoRA, no rsLoRA)")
    if config.get("modules_to_save") or config.get("bias", "none") != "none":
        raise ExportError(f"{adapter_dir}: modules_to_save and LoRA biases have no GGUF adapter form")
    if config.get("rank_pattern") or config.get("alpha_pattern"):
        raise ExportError(f"{adapter_dir}: per-module ranks or alphas have no GGUF adapter form")
    return config, load_file(str(adapter_dir / "adapter_model.safetensors"))


def export_adapter(adapter_dir: str | Path, out: str | Path, base: str = "smollm2", dtype: str = "f16") -> Path:
    """A peft LoRA folder (``output_dir/final``) -> a GGUF adapter for ``embedded:<base>?lora=<out>``."""
    import gguf

    adapter_dir, out = Path(adapter_dir), Path(out)
    config, tensors = _adapter_tensors(adapter_dir)
    reader = _template(base)
    names = _names(reader)
    writer = gguf.GGUFWriter(str(out), "llama")
    writer.add_string("general.type", "adapter")
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(config["lora_alpha"]))
    target = np.float16 if dtype == "f16" else np.float32
    for key in sorted(tensors):
        if ".lora_A." not in key and ".lora_B." not in key:
            raise ExportError(f"{adapter_dir}: unexpected tensor {key}")
        hf = key.removeprefix("base_model.model.").replace(".lora_A.weight", ".weight").replace(
            ".lora_B.weight", ".weight")
        if hf not in names:
            raise ExportError(f"{adapter_dir}: {key} targets {hf}, which the base GGUF does not have")
        value = tensors[key].astype(np.float32)
        heads = _heads(reader, hf)
        if ".lora_B." in key and heads:
            value = _permute(value, heads)
        suffix = ".lora_a" if ".lora_A." in key else ".lora_b"
        writer.add_tensor(names[hf] + suffix, value.astype(target))
    return _write(writer, out)


def _unpermute(weights: np.ndarray, heads: int) -> np.ndarray:
    """The inverse of ``_permute``: transformers' row order from llama.cpp's."""
    return (weights.reshape(heads, weights.shape[0] // heads // 2, 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


def import_adapter(path: str | Path, out: str | Path, base: str = "smollm2") -> Path:
    """A GGUF LoRA adapter (e.g. the packaged lwm-mini) -> a peft folder over ``base``: the exact inverse of
    ``export_adapter`` (a round trip gives the same tensors), so training can start from a shipped adapter."""
    import gguf
    from safetensors.numpy import save_file

    path, out = Path(path), Path(out)
    adapter = gguf.GGUFReader(str(path))
    if _field(adapter, "general.type") != "adapter" or _field(adapter, gguf.Keys.Adapter.TYPE) != "lora":
        raise ExportError(f"{path}: not a GGUF LoRA adapter")
    reader = _template(base)
    hf_name = {name: hf for hf, name in _names(reader).items()}
    tensors: dict[str, np.ndarray] = {}
    ranks, modules = set(), set()
    for tensor in adapter.tensors:
        name, _, part = tensor.name.rpartition(".")
        hf = hf_name.get(name)
        if hf is None or part not in ("lora_a", "lora_b"):
            raise ExportError(f"{path}: tensor {tensor.name} targets nothing in the {base} base")
        value = np.array(tensor.data, dtype=np.float32)
        heads = _heads(reader, hf)
        if part == "lora_b" and heads:
            value = _unpermute(value, heads)
        ranks.add(value.shape[0] if part == "lora_a" else value.shape[1])
        modules.add(hf.split(".")[-2])
        kind = "lora_A" if part == "lora_a" else "lora_B"
        tensors[f"base_model.model.{hf.removesuffix('.weight')}.{kind}.weight"] = value
    if len(ranks) != 1:
        raise ExportError(f"{path}: LoRA ranks differ across tensors ({sorted(ranks)})")
    config = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": base, "r": ranks.pop(),
              "lora_alpha": float(_field(adapter, gguf.Keys.Adapter.LORA_ALPHA)), "target_modules": sorted(modules),
              "lora_dropout": 0.0, "bias": "none", "fan_in_fan_out": False, "inference_mode": False}
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out / "adapter_model.safetensors"))
    (out / "adapter_config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    return out


def quantize(source: str | Path, out: str | Path, kind: str = "Q4_1") -> Path:
    """A GGUF model quantized with llama.cpp (``lwm.backends.gguf_merge.quantize``), e.g. Q4_1 like the base."""
    try:
        return _quantize(source, out, kind)
    except BackendError as exc:
        raise ExportError(str(exc)) from None


def gguf_tensors(path: str | Path) -> Iterator[tuple[str, str, tuple[int, ...]]]:
    """(name, type, shape) of each tensor in a GGUF file: what an export wrote."""
    import gguf

    for tensor in gguf.GGUFReader(str(path)).tensors:
        yield tensor.name, tensor.tensor_type.name, tuple(int(x) for x in tensor.shape)
