"""The transformers backend on a real (tiny, randomly initialised) model folder written by the test."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from lwm.backends import BackendError, GenerateConfig, load_backend  # noqa: E402
from lwm.worldmodel import WorldModel  # noqa: E402
from tests.samples import trajectory  # noqa: E402

TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
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


async def test_generation_from_a_local_folder(model_dir):
    backend = load_backend(f"transformers:{model_dir}")
    config = GenerateConfig(temperature=0.0, max_tokens=12)
    first = await backend.generate([{"role": "user", "content": "ls -la"}], config)
    again = await backend.generate([{"role": "user", "content": "ls -la"}], config)
    assert first.text == again.text
    assert 0 < first.completion_tokens <= 12 and first.prompt_tokens > 3
    assert backend.context_window == 4096 and backend.count_tokens("ls -la") >= 1


def test_world_model_over_transformers(model_dir):
    wm = WorldModel(f"transformers:{model_dir}", config=GenerateConfig(max_tokens=8), cache=False)
    obs = wm.predict_sync(trajectory("terminal", 1), [{"keystrokes": "pwd\n", "duration": 0.1}])
    assert obs.metadata["model"] == f"transformers:{model_dir.name}" and obs.raw is not None


def test_missing_folder_is_named(tmp_path):
    with pytest.raises(BackendError, match="folder not found"):
        load_backend(f"transformers:{tmp_path / 'nope'}")
