"""Shared fixtures. Outbound network is blocked (pytest-socket, loopback allowed: see pyproject)."""

from __future__ import annotations

import os

import pytest

from lwm.testing.openai_server import ScriptedServer

HARDWARE = ("GPU", "CUDA", "Android", "adb", "as root")
"""The only reasons a test may skip under `make test` (LWM_STRICT_SKIPS=1): hardware setup cannot install, or
running as root (what some sandbox limits bind to)."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    """Under `make test` a skip for a part setup should have installed (a package, a doc set, a venv) is a
    failure: a fresh machine once skipped or failed 16 tests for parts setup had left out, silently."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("LWM_STRICT_SKIPS") == "1" and report.skipped and not hasattr(report, "wasxfail"):
        reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if not any(word.lower() in reason.lower() for word in HARDWARE):
            report.outcome = "failed"
            report.longrepr = f"skipped under make test, for something setup installs: {reason}"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own answer cache, so no test sees another's cached answers."""
    monkeypatch.setenv("LWM_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def server():
    with ScriptedServer() as srv:
        yield srv


TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny randomly initialised Llama with its own BPE tokenizer and chat template, written locally."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("tiny-llama")
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel()
    corpus = ["user@lwm:~$ ls -la", "total 8 drwxr-xr-x", "### Turn 1 **Action:** keystrokes duration"] * 20
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<|end|>"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<|end|>")
    fast.chat_template = TEMPLATE
    fast.save_pretrained(path)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
                         eos_token_id=fast.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(path)
    return path
