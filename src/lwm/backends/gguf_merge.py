"""A LoRA adapter merged into its base, once, as one quantized GGUF model: what ``embedded:lwm-mini`` runs.

llama.cpp applies an adapter at run time as two extra small matrix products beside every adapted weight: on
the 2-core box that made lwm-mini's prompt evaluation ~10 % and its decoding ~25 % slower than the base's
(benchmarks/sim_session.py). Merged, W' = W + (alpha / r) * B @ A, the model costs exactly what its base
does. The merge runs on first use (a few seconds: each base tensor dequantized with the ``gguf`` package, the
adapter's product added, written as f32, then quantized by llama.cpp itself) into lwm's cache, keyed by the
digests of both files and the quantization, and is reused after; a killed merge leaves no file behind.

Merged weights are quantized to Q8_0 by default, not to the base's Q4_1: requantizing to 4 bits adds a
second rounding on top of the one the adapter was trained against (on 6 short out-of-domain prompts, 0 of 6
greedy answers matched base + adapter at Q4_1, 2 of 6 at Q8_0; on the bench sample's terminal prompts the Q8_0
model's first lines match, tests/backends/test_embedded.py); and on the 2-core box Q8_0 evaluated prompts
faster than Q4_1 (737 against 461 tokens/s). Whether merging changes bench scores is not yet measured.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from lwm.backends.base import BackendError

MERGE_FORMAT = 1
QUANT_TYPES = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K_M", "Q5_K_M", "Q6_K")
"""Types ``quantize`` accepts (llama.cpp's LLAMA_FTYPE_MOSTLY_* names)."""


def quantize(source: str | Path, out: str | Path, kind: str = "Q4_1", token_embedding: str | None = None) -> Path:
    """A GGUF model quantized with llama.cpp (``llama_model_quantize``), e.g. Q4_1 like the packaged base;
    ``token_embedding``: the embedding table's own type (the packaged base keeps it at Q8_0)."""
    import llama_cpp

    ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{kind.upper()}", None)
    if ftype is None:
        raise BackendError(f"unknown quantization {kind!r}; use one of {', '.join(QUANT_TYPES)}")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    if token_embedding:
        params.token_embedding_type = getattr(llama_cpp, f"GGML_TYPE_{token_embedding.upper()}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    code = llama_cpp.llama_model_quantize(str(source).encode(), str(out).encode(), ctypes.byref(params))
    if code != 0:
        raise BackendError(f"llama.cpp could not quantize {source} to {kind} (code {code})")
    return out


def copy_metadata(reader: Any, writer: Any, skip: tuple[str, ...] = ()) -> None:
    """Every metadata field of a GGUF (tokenizer, template, hyperparameters) into a writer."""
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key in ("general.architecture", *skip):
            continue
        sub_type = field.types[-1] if len(field.types) > 1 else None
        writer.add_key_value(key, field.contents(), field.types[0], sub_type=sub_type)


def _adapter(path: Path) -> tuple[float, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """(alpha, {base tensor name: (A, B)}) of a LoRA adapter GGUF; A is r x in, B out x r."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    if str(reader.fields["general.type"].contents()) != "adapter":
        raise BackendError(f"{path}: not a LoRA adapter GGUF")
    alpha = float(reader.fields[gguf.Keys.Adapter.LORA_ALPHA].contents())
    parts: dict[str, dict[str, np.ndarray]] = {}
    for tensor in reader.tensors:
        name, _, part = tensor.name.rpartition(".")
        parts.setdefault(name, {})[part] = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
    pairs = {name: (p["lora_a"], p["lora_b"]) for name, p in parts.items() if "lora_a" in p and "lora_b" in p}
    if len(pairs) != len(parts):
        raise BackendError(f"{path}: an adapted tensor lacks lora_a or lora_b")
    return alpha, pairs


def merge_to_f32(base: Path, adapter: Path, out: Path) -> Path:
    """``base`` with ``adapter`` added to its weights, every tensor f32 (norms stay f32 as they were)."""
    import gguf

    reader = gguf.GGUFReader(str(base))
    alpha, pairs = _adapter(adapter)
    writer = gguf.GGUFWriter(str(out), str(reader.fields["general.architecture"].contents()))
    copy_metadata(reader, writer, skip=("general.file_type", "general.quantization_version"))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    found = set()
    for tensor in reader.tensors:
        value = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        if tensor.name in pairs:
            a, b = pairs[tensor.name]
            value = value + (alpha / a.shape[0]) * (b @ a)
            found.add(tensor.name)
        writer.add_tensor(tensor.name, value)
    if missing := set(pairs) - found:
        raise BackendError(f"{adapter}: adapts tensors {sorted(missing)[:3]} that {base.name} does not have")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def merged_model(base: Path, adapter: Path, kind: str = "Q8_0", folder: Path | None = None) -> Path:
    """The merged, quantized model of ``base`` + ``adapter`` in lwm's cache: built once (said on stderr),
    then reused. Two processes building it at once each write their own temporary file; the last rename wins
    with the same bytes."""
    from lwm.cache import cache_root
    from lwm.runfolder import digest

    folder = folder or cache_root() / "models"
    key = hashlib.sha256(f"{MERGE_FORMAT}:{digest(base)}:{digest(adapter)}:{kind}".encode()).hexdigest()[:16]
    out = folder / f"{adapter.stem}-merged-{kind.lower()}-{key}.gguf"
    if out.is_file():
        problem = _damage(out)
        if problem is None:
            return out
        print(f"lwm: the merged model {out} is damaged ({problem}): building it again", file=sys.stderr)
        out.unlink(missing_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    staging_f32 = folder / f".{out.stem}.{os.getpid()}.f32.gguf"
    staging = folder / f".{out.stem}.{os.getpid()}.gguf"
    try:
        merge_to_f32(base, adapter, staging_f32)
        quantize(staging_f32, staging, kind, token_embedding="Q8_0")
        _seal(staging, out)
        staging.replace(out)
    finally:
        staging_f32.unlink(missing_ok=True)
        staging.unlink(missing_ok=True)
    print(f"lwm: first use of {adapter.name}: merged it into {base.name} as {kind} "
          f"({time.perf_counter() - started:.1f} s) in {folder}", file=sys.stderr)
    return out


def _seal_path(model: Path) -> Path:
    return model.with_name(model.name + ".sha256")


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _seal(staging: Path, final: Path) -> None:
    """Record the built model's size, modification time and hash beside it (written before the model is renamed
    into place; the rename keeps the time)."""
    stat = staging.stat()
    _seal_path(final).write_text(json.dumps({"size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
                                             "sha256": _sha256(staging)}))


def _damage(model: Path) -> str | None:
    """What is wrong with a cached merged model (cut short, overwritten, no record of what it was), or None.
    A model cut short failed every run for ever; one overwritten in 4 MiB loaded and answered dots."""
    try:
        seal = json.loads(_seal_path(model).read_text())
    except (OSError, ValueError):
        return "no record of its size and hash"
    stat = model.stat()
    if stat.st_size != seal.get("size"):
        return f"{stat.st_size:,} bytes, built with {seal.get('size'):,}"
    if stat.st_mtime_ns == seal.get("mtime_ns"):  # untouched since it was built: no need to read 145 MB each run
        return None
    return None if _sha256(model) == seal.get("sha256") else "its bytes are not the ones built"
