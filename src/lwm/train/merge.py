"""A trained model folder (a full fine-tune, or a LoRA folder merged into its base) written as one GGUF
model, through the same tensor names and Q/K row order as ``export.py``. Apart from it because it loads the
model the way training does (``train.common``), which ``export.py``, below training, must not import."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lwm.backends.gguf_merge import copy_metadata
from lwm.train.common import load_model
from lwm.train.export import ExportError, _heads, _names, _permute, _template, _write


def _merged_state(model_dir: Path) -> dict[str, np.ndarray]:
    """Every weight of a trained model folder, with a LoRA adapter folder merged into its base (found the
    way training finds it, ``train.common.load_model``)."""
    model, _ = load_model(str(model_dir), seed=0)
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    return {k: v.detach().float().numpy() for k, v in model.state_dict().items()}


def export_model(model_dir: str | Path, out: str | Path, base: str = "smollm2", dtype: str = "f16") -> Path:
    """A trained model folder (full fine-tune, or LoRA merged into its base) -> a GGUF model (f16 or f32)."""
    import gguf

    model_dir, out = Path(model_dir), Path(out)
    reader = _template(base)
    names = _names(reader)
    state = _merged_state(model_dir)
    writer = gguf.GGUFWriter(str(out), "llama")
    copy_metadata(reader, writer, skip=("general.file_type", "general.quantization_version"))
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if dtype == "f16" else gguf.LlamaFileType.ALL_F32)
    hf_name = {gguf_name: hf for hf, gguf_name in names.items()}
    for tensor in reader.tensors:
        hf = hf_name.get(tensor.name)
        if hf is None or hf not in state:
            raise ExportError(f"{model_dir}: no weight for the base tensor {tensor.name} ({hf})")
        value = state[hf]
        heads = _heads(reader, hf)
        if heads:
            value = _permute(value, heads)
        # Norms stay f32, as llama.cpp's own conversion keeps every 1-D tensor.
        writer.add_tensor(tensor.name, value.astype(np.float16 if dtype == "f16" and value.ndim > 1 else np.float32))
    return _write(writer, out)
