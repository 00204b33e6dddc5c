import asyncio

import pytest

from lwm.backends import GenerateConfig, MockBackend
from lwm.cache import GenerationCache
from lwm.domains import ActionError
from lwm.types import Action, Context, Observation, Trajectory
from lwm.worldmodel import ContextOverflowError, WorldModel
from tests.samples import SAMPLES, trajectory

LS = [{"keystrokes": "ls\n", "duration": 0.1}]


def long_session(turns: int) -> Trajectory:
    t = Trajectory(domain="terminal")
    for i in range(turns):
        t = t.extended(Action(content=[{"keystrokes": f"echo {i}\n", "duration": 0.1}]),
                       Observation(content=f"$ echo {i}\n{i}\n" + "x" * 400))
    return t


def test_predict_parses_and_reports_metadata():
    backend = MockBackend(["<think>hm</think><predicted_observation>file.txt\n$ </predicted_observation>"])
    wm = WorldModel(backend, cache=False)
    obs = wm.predict_sync(trajectory("terminal", 1), LS)
    assert obs.content == "file.txt\n$"
    assert obs.reasoning == "hm" and obs.metadata["parse"] == "tagged" and obs.metadata["cached"] is False
    assert backend.calls[0][-1]["content"].startswith("### Turn 2\n")


def test_invalid_action_is_refused_before_any_model_call():
    backend = MockBackend()
    with pytest.raises(ActionError):
        WorldModel(backend, cache=False).predict_sync(trajectory("terminal"), {"keys": "ls"})
    assert backend.calls == []


def test_repeated_call_is_served_from_the_disk_cache(tmp_path):
    backend = MockBackend()
    cache = GenerationCache(tmp_path / "c.sqlite")
    first = WorldModel(backend, cache=cache).predict_sync(trajectory("mcp", 1), SAMPLES["mcp"][1][0])
    again = WorldModel(backend, cache=GenerationCache(tmp_path / "c.sqlite")).predict_sync(
        trajectory("mcp", 1), SAMPLES["mcp"][1][0])
    assert len(backend.calls) == 1
    assert again.content == first.content and again.metadata["cached"] is True


def test_cache_key_includes_sampling_settings(tmp_path):
    backend = MockBackend()
    cache = GenerationCache(tmp_path / "c.sqlite")
    for seed in (1, 2, 1):
        WorldModel(backend, cache=cache, config=GenerateConfig(seed=seed, temperature=0.7)).predict_sync(
            trajectory("terminal"), LS)
    assert len(backend.calls) == 2 and len(cache) == 2


def test_greedy_answers_are_shared_across_seeds(tmp_path):
    """Simulated episodes are seeded apart; a greedy world model answers them alike, so the cache serves them."""
    backend = MockBackend()
    cache = GenerationCache(tmp_path / "c.sqlite")
    for seed in (1, 2, None):
        WorldModel(backend, cache=cache, config=GenerateConfig(seed=seed, temperature=0.0)).predict_sync(
            trajectory("terminal"), LS)
    assert len(backend.calls) == 1 and len(cache) == 1


def test_unseeded_sampling_is_never_cached(tmp_path):
    backend = MockBackend()
    cache = GenerationCache(tmp_path / "c.sqlite")
    wm = WorldModel(backend, cache=cache, config=GenerateConfig(seed=None, temperature=0.8))
    wm.predict_sync(trajectory("terminal"), LS)
    wm.predict_sync(trajectory("terminal"), LS)
    assert len(backend.calls) == 2 and len(cache) == 0


def test_oldest_turns_are_dropped_to_fit_and_the_prompt_says_so():
    backend = MockBackend(context_window=1200)
    wm = WorldModel(backend, cache=False, config=GenerateConfig(max_tokens=200))
    session = long_session(20)
    prompt = wm.build_prompt(session, Action(content=LS))
    assert prompt.dropped_turns > 0 and prompt.tokens <= 1200 - 200
    system, *rest = prompt.messages
    assert f"turns 1-{prompt.dropped_turns} of this session are omitted" in system["content"]
    assert rest[0]["content"].startswith(f"### Turn {prompt.dropped_turns + 1}\n")
    assert rest[-1]["content"].startswith("### Turn 21\n")
    assert len(rest) == 2 * (20 - prompt.dropped_turns) + 1
    obs = wm.predict_sync(session, LS)
    assert obs.metadata["dropped_turns"] == prompt.dropped_turns


def test_a_benchmark_sample_is_fitted_and_sent_like_the_session_it_came_from():
    """A bench sample carries its session already laid out; complete() fits it the same way predict() does."""
    from lwm.bench.samples import export_trajectories

    backend = MockBackend(context_window=1200)
    wm = WorldModel(backend, cache=False, compact=False, config=GenerateConfig(max_tokens=200))
    session = long_session(20).extended(Action(content=LS), Observation(content="notes.txt"))
    sample = export_trajectories([session])[-1]
    before = session.model_copy(update={"turns": session.turns[:-1]})
    observation = asyncio.run(wm.complete(sample.conversation()))
    wm.predict_sync(before, LS)
    assert backend.calls[-1] == backend.calls[-2] and observation.metadata["dropped_turns"] > 0


def test_nothing_is_dropped_when_it_fits():
    prompt = WorldModel(MockBackend(context_window=100_000), cache=False).build_prompt(long_session(5), Action(content=LS))
    assert prompt.dropped_turns == 0 and "omitted" not in prompt.messages[0]["content"]


def test_system_prompt_and_action_that_cannot_fit_give_a_clear_error():
    wm = WorldModel(MockBackend(context_window=300), cache=False, config=GenerateConfig(max_tokens=100))
    with pytest.raises(ContextOverflowError, match="300-token window"):
        wm.build_prompt(Trajectory(domain="terminal", context=Context(task="x" * 2000)), Action(content=LS))


async def test_predict_many_runs_concurrently_in_order():
    active = peak = 0

    class Slow(MockBackend):
        async def generate(self, messages, config):
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.05)
            active -= 1
            return await super().generate(messages, config)

    wm = WorldModel(Slow(lambda m: f"<predicted_observation>{m[-1]['content'][-20:]}</predicted_observation>"),
                    cache=False)
    items = [(trajectory("terminal"), [{"keystrokes": f"echo {i}\n", "duration": 0.1}]) for i in range(8)]
    out = await wm.predict_many(items)
    assert peak == 8
    assert [o.content for o in out] == [f'"echo {i}\\n",\n    "duration": 0.1\n  }}\n]\n```'[-20:] for i in range(8)]


def test_compact_backends_stop_at_the_closing_tag():
    small = MockBackend()
    small.compact_prompts = True
    assert WorldModel(small, cache=False).config.stop == ("</predicted_observation>",)
    assert WorldModel(MockBackend(), cache=False).config.stop is None


def test_spec_string_selects_the_backend():
    assert WorldModel("mock", cache=False).backend.name == "mock"
    assert WorldModel("mock:x", cache=False).backend.name == "mock:x"


async def test_predict_sync_works_inside_a_running_event_loop():
    wm = WorldModel(MockBackend(), cache=False)
    obs = wm.predict_sync(trajectory("terminal"), LS)
    assert obs.content.startswith("mock observation")
