"""The real base model and export round trip: packaged SmolLM2 GGUF -> transformers -> (LoRA) -> GGUF -> llama.cpp.

These use the real 135M model (no toy): the base conversion takes ~40 s once per test session.
"""

import json

import pytest
from typer.testing import CliRunner

from lwm.cli import app

pytestmark = pytest.mark.slow  # trains or converts real models

pytest.importorskip("peft")
pytest.importorskip("gguf")
pytest.importorskip("llama_cpp")

PROMPTS = ["The capital of France is", "$ ls -la\ntotal", "def fibonacci(n):"]
NEW_TOKENS = 12


@pytest.fixture(scope="session")
def smollm2_dir(tmp_path_factory):
    from lwm.train.base_model import base_model_dir

    return base_model_dir("smollm2", cache_dir=tmp_path_factory.mktemp("base-cache"))


@pytest.fixture(scope="session")
def random_lora(smollm2_dir, tmp_path_factory):
    """A LoRA on every linear module with non-zero B, so it visibly changes the model."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(1)
    config = LoraConfig(r=4, lora_alpha=8, init_lora_weights=False, target_modules=[
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(smollm2_dir, dtype=torch.float32), config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.mul_(0.3)
    path = tmp_path_factory.mktemp("lora")
    model.save_pretrained(path)
    return path


def _hf_greedy(model, tokenizer, prompt):
    import torch

    ids = tokenizer(prompt, return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=NEW_TOKENS, do_sample=False)
    return ids[0].tolist(), out[0, ids.shape[1]:].tolist()


def _cpp_greedy(llm, ids):
    tokens = []
    for token in llm.generate(ids, top_k=1, temp=0.0, reset=True):
        tokens.append(token)
        if len(tokens) == NEW_TOKENS:
            break
    return tokens


def _peft(smollm2_dir, lora):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = AutoModelForCausalLM.from_pretrained(smollm2_dir, dtype=torch.float32)
    return PeftModel.from_pretrained(base, lora), AutoTokenizer.from_pretrained(smollm2_dir)


def test_the_packaged_gguf_converts_to_a_trainable_saved_model(smollm2_dir):
    config = json.loads((smollm2_dir / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "llama"
    assert (smollm2_dir / "model.safetensors").stat().st_size > 400e6  # fp32 weights, dequantized
    assert (smollm2_dir / "tokenizer.json").is_file()


def test_merged_export_gives_the_same_greedy_output_in_llama_cpp(smollm2_dir, random_lora, tmp_path):
    from llama_cpp import Llama

    from lwm.train.merge import export_model

    out = export_model(random_lora, tmp_path / "merged.gguf", dtype="f32")
    model, tokenizer = _peft(smollm2_dir, random_lora)
    llm = Llama(str(out), n_ctx=256, verbose=False)
    for prompt in PROMPTS:
        ids, expected = _hf_greedy(model, tokenizer, prompt)
        assert _cpp_greedy(llm, ids) == expected, prompt
    llm.close()


def test_adapter_export_gives_the_same_greedy_output_in_llama_cpp(smollm2_dir, random_lora, tmp_path):
    from llama_cpp import Llama

    from lwm.train.export import export_adapter, gguf_tensors
    from lwm.train.merge import export_model

    base = export_model(smollm2_dir, tmp_path / "base.gguf", dtype="f32")
    adapter = export_adapter(random_lora, tmp_path / "lora.gguf", dtype="f32")
    names = {name for name, _, _ in gguf_tensors(adapter)}
    assert "blk.0.attn_q.weight.lora_a" in names and "blk.29.ffn_down.weight.lora_b" in names
    model, tokenizer = _peft(smollm2_dir, random_lora)
    plain = Llama(str(base), n_ctx=256, verbose=False)
    adapted = Llama(str(base), lora_path=str(adapter), n_ctx=256, verbose=False)
    changed = 0
    for prompt in PROMPTS:
        ids, expected = _hf_greedy(model, tokenizer, prompt)
        assert _cpp_greedy(adapted, ids) == expected, prompt
        changed += _cpp_greedy(plain, ids) != expected
    assert changed  # the adapter really is applied
    plain.close()
    adapted.close()


def test_a_gguf_adapter_imports_back_exactly(smollm2_dir, random_lora, tmp_path):
    import numpy as np
    from safetensors.numpy import load_file

    from lwm.train.export import export_adapter, import_adapter

    back = import_adapter(export_adapter(random_lora, tmp_path / "lora.gguf", dtype="f32"), tmp_path / "back")
    original, imported = load_file(random_lora / "adapter_model.safetensors"), \
        load_file(back / "adapter_model.safetensors")
    assert original.keys() == imported.keys()
    assert all(np.array_equal(original[k], imported[k]) for k in original)  # q/k rows un-permuted too
    config = json.loads((back / "adapter_config.json").read_text())
    assert config["r"] == 4 and config["lora_alpha"] == 8 and len(config["target_modules"]) == 7


def test_the_shipped_world_model_becomes_a_trainable_adapter_that_acts_as_in_llama_cpp(smollm2_dir, tmp_path):
    """LWM warm-up starts an agent policy from lwm-mini: its GGUF adapter imported as a peft folder must be
    the same model llama.cpp runs."""
    from llama_cpp import Llama

    from lwm.backends.embedded import packaged_adapter
    from lwm.train.base_model import packaged_adapter_dir
    from lwm.train.merge import export_model

    folder = packaged_adapter_dir("lwm-mini", cache_dir=tmp_path)
    assert folder is not None and packaged_adapter_dir("lwm-mini", cache_dir=tmp_path) == folder  # imported once
    assert packaged_adapter_dir("smollm2", cache_dir=tmp_path) is None
    base = export_model(smollm2_dir, tmp_path / "base.gguf", dtype="f32")
    adapted = Llama(str(base), lora_path=str(packaged_adapter("lwm-mini")[1]), n_ctx=256, verbose=False)
    model, tokenizer = _peft(smollm2_dir, folder)
    for prompt in PROMPTS:
        ids, expected = _hf_greedy(model, tokenizer, prompt)
        assert _cpp_greedy(adapted, ids) == expected, prompt
    adapted.close()


def test_export_cli_writes_a_quantized_model_the_embedded_backend_runs(random_lora, tmp_path):
    from lwm.backends import GenerateConfig
    from lwm.backends.embedded import EmbeddedBackend
    from lwm.train.export import gguf_tensors
    from lwm.worldmodel import run_sync

    out = tmp_path / "mini-q4_1.gguf"
    result = CliRunner().invoke(app, ["train", "export", str(random_lora), "--out", str(out), "--merge",
                                      "--quantize", "Q4_1"])
    assert result.exit_code == 0, result.output
    types = [kind for _, kind, _ in gguf_tensors(out)]
    assert types.count("Q4_1") > 150 and 80e6 < out.stat().st_size < 120e6
    backend = EmbeddedBackend(str(out), n_ctx=512)
    generation = run_sync(backend.generate([{"role": "user", "content": "Say hi"}], GenerateConfig(max_tokens=8)))
    assert generation.completion_tokens > 0


def test_export_refuses_what_has_no_gguf_form(tmp_path, random_lora):
    from lwm.train.export import ExportError, export_adapter

    config = json.loads((random_lora / "adapter_config.json").read_text())
    broken = tmp_path / "dora"
    broken.mkdir()
    (broken / "adapter_config.json").write_text(json.dumps({**config, "use_dora": True}))
    with pytest.raises(ExportError, match="no DoRA"):
        export_adapter(broken, tmp_path / "x.gguf")
    with pytest.raises(ExportError, match="not a peft LoRA"):
        export_adapter(tmp_path, tmp_path / "x.gguf")
