"""The transformers backend on a real (tiny, randomly initialised) model folder written by the test."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from lwm.backends import BackendError, GenerateConfig, load_backend  # noqa: E402
from lwm.worldmodel import WorldModel  # noqa: E402
from tests.samples import trajectory  # noqa: E402


async def test_generation_from_a_local_folder(tiny_model_dir):
    model_dir = tiny_model_dir
    backend = load_backend(f"transformers:{model_dir}")
    config = GenerateConfig(temperature=0.0, max_tokens=12)
    first = await backend.generate([{"role": "user", "content": "ls -la"}], config)
    again = await backend.generate([{"role": "user", "content": "ls -la"}], config)
    assert first.text == again.text
    assert 0 < first.completion_tokens <= 12 and first.prompt_tokens > 3
    assert backend.context_window == 4096 and backend.count_tokens("ls -la") >= 1


def test_world_model_over_transformers(tiny_model_dir):
    model_dir = tiny_model_dir
    wm = WorldModel(f"transformers:{model_dir}", config=GenerateConfig(max_tokens=8), cache=False)
    obs = wm.predict_sync(trajectory("terminal", 1), [{"keystrokes": "pwd\n", "duration": 0.1}])
    assert obs.metadata["model"] == f"transformers:{model_dir.name}" and obs.raw is not None


def test_missing_folder_is_named(tmp_path):
    with pytest.raises(BackendError, match="folder not found"):
        load_backend(f"transformers:{tmp_path / 'nope'}")
