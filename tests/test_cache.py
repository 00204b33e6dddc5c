"""The answer cache shared by processes: opening a fresh one from many at once must not fail."""

import multiprocessing

from lwm.backends.base import Generation
from lwm.cache import GenerationCache


def _open_and_use(path: str, barrier, errors) -> None:
    barrier.wait()
    try:
        cache = GenerationCache(path)
        cache.put("k", "m", Generation(text="x"))
        assert cache.get("k") is not None
        cache.close()
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        errors.put(f"{type(exc).__name__}: {exc}")


def test_many_processes_open_a_fresh_cache_at_once(tmp_path):
    context = multiprocessing.get_context("fork")
    errors = context.Queue()
    for round_ in range(12):
        barrier = context.Barrier(8)
        workers = [context.Process(target=_open_and_use, args=(str(tmp_path / f"c{round_}.sqlite"), barrier, errors))
                   for _ in range(8)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        assert all(w.exitcode == 0 for w in workers)
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert not failures, failures[:3]


def test_a_cache_that_cannot_be_written_is_one_line_and_the_model_still_answers(tmp_path, monkeypatch, capsys):
    from lwm.backends import MockBackend
    from lwm.types import Action, Trajectory
    from lwm.worldmodel import WorldModel

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("LWM_CACHE_DIR", str(blocker / "cache"))
    model = WorldModel(MockBackend())
    assert model.cache is None and "set LWM_CACHE_DIR" in capsys.readouterr().err
    observation = model.predict_sync(Trajectory(domain="terminal"), Action(content=[{"keystrokes": "ls\n"}]))
    assert observation.content.startswith("mock observation")
