"""The OpenEnv face, driven by OpenEnv's own client over a real uvicorn server on loopback."""

import json
import shutil

import pytest

pytest.importorskip("openenv.core")
from openenv.core import GenericEnvClient  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from lwm.data import read_trajectories  # noqa: E402
from lwm.model_options import ModelOptions  # noqa: E402
from lwm.serve.openenv import openenv_app  # noqa: E402
from lwm.serve.session import ServeConfig  # noqa: E402
from lwm.testing.asgi import ThreadedServer  # noqa: E402
from lwm.testing.openai_server import ScriptedServer  # noqa: E402

LS = {"action": [{"keystrokes": "ls\n"}]}


def client(url: str):
    return GenericEnvClient(base_url=url).sync()


def test_each_client_is_its_own_session_with_its_own_history_and_recording(tmp_path):
    store = tmp_path / "served"
    with ScriptedServer() as model:
        config = ServeConfig(domain="terminal", model=ModelOptions("openai:scripted", base_url=model.base_url),
                             store=store)
        with ThreadedServer(openenv_app(config)) as server, client(server.url) as a, client(server.url) as b:
            first = a.reset(seed=1)
            b.reset(seed=2)
            assert first.observation["text"] == "user@sandbox:~$ " and first.observation["info"]["mode"] == "sim"
            a.step({"action": [{"keystrokes": "echo only-in-a\n"}]})
            stepped = b.step({"action": [{"keystrokes": "echo only-in-b\n"}]})
            b.step(LS)
            assert stepped.observation["text"].startswith("scripted observation") and stepped.done is False
            state = b.state()
            assert state["step_count"] == 2 and state["domain"] == "terminal" and state["model"] == "openai:scripted"
        sent = [json.dumps(r["messages"]) for r in model.requests]
    b_requests = [s for s in sent if "only-in-b" in s]
    assert len(b_requests) == 2 and not any("only-in-a" in s for s in b_requests)  # histories never mix
    recorded = list(read_trajectories(store))  # each session recorded when its client left
    assert sorted(len(t.turns) for t in recorded) == [1, 2]
    assert {t.provenance.extra["served"] for t in recorded} == {"openenv"}


def test_a_malformed_message_is_an_error_and_the_session_goes_on(tmp_path):
    config = ServeConfig(domain="terminal", model="mock")
    with ThreadedServer(openenv_app(config)) as server, client(server.url) as env:
        env.reset()
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step({"not_an_action": 1})
        with pytest.raises(RuntimeError, match="reset"):
            GenericEnvClient(base_url=server.url).sync().__enter__().step(LS)  # a step before any reset
        assert env.step(LS).observation["text"].startswith("mock observation")


def test_sessions_are_bounded(tmp_path):
    with ThreadedServer(openenv_app(ServeConfig(domain="terminal", model="mock"), max_sessions=1)) as server:
        with client(server.url) as first:
            first.reset()
            with connect(server.url.replace("http", "ws") + "/ws") as second:  # one more: refused, said why
                refusal = json.loads(second.recv(timeout=5))
            assert refusal["data"]["code"] == "CAPACITY_REACHED" and refusal["data"]["max_sessions"] == 1
            assert first.step(LS).observation["text"]


@pytest.mark.skipif(not (shutil.which("tmux") and shutil.which("bwrap")), reason="needs tmux and bubblewrap")
def test_the_same_server_fronts_the_real_environment_with_a_tasks_reward(tmp_path):
    config = ServeConfig(domain="terminal", mode="real", store=tmp_path / "real")
    with ThreadedServer(openenv_app(config)) as server, client(server.url) as env:
        env.reset(task="terminal/count-lines-0000")
        shown = env.step({"action": [{"keystrokes": "wc -l < data.txt > count.txt; cat count.txt\n",
                                      "duration": 0.5}]})
        assert "39" in shown.observation["text"] and shown.observation["info"]["mode"] == "real"
        done = env.step({"action": {"name": "final_answer", "arguments": {"answer": "done"}}})
        assert done.done is True and done.reward == 1.0
    (recorded,) = read_trajectories(tmp_path / "real")
    assert recorded.provenance.extra["task"] == "terminal/count-lines-0000" and recorded.provenance.extra["reward"] == 1


def test_a_control_spec_perturbs_served_steps_and_is_recorded(tmp_path):
    from lwm.envs.control import ControlSpec

    spec = ControlSpec.model_validate({"seed": 1, "perturbations": [{"error": {"rate": 1.0, "kinds": ["not_found"]}}]})
    config = ServeConfig(domain="terminal", model="mock", control=spec, store=tmp_path / "s")
    with ThreadedServer(openenv_app(config)) as server, client(server.url) as env:
        env.reset(seed=0)
        assert env.step(LS).observation["text"] == "Error: not found (404)"
    (recorded,) = read_trajectories(tmp_path / "s")
    assert recorded.provenance.extra["control"]["perturbations"][0]["error"]["kinds"] == ["not_found"]
    assert recorded.turns[0].observation.metadata["perturbations"] == ["error:not_found"]


def test_http_without_a_session_is_a_4xx_that_says_sessions_are_websocket_and_bodies_are_bounded():
    import httpx2 as httpx

    from lwm.serve.auth import MAX_BODY, protect

    with ThreadedServer(protect(openenv_app(ServeConfig(domain="terminal", model="mock")), "127.0.0.1", None)) as server:
        step = httpx.post(f"{server.url}/step", json={"action": LS})
        assert step.status_code == 409 and "WebSocket" in step.json()["detail"]
        big = httpx.post(f"{server.url}/reset", content=b" " * (MAX_BODY + 1),
                         headers={"content-type": "application/json"})
        assert big.status_code == 413

        def streamed():
            for _ in range(MAX_BODY // 2**20 + 2):
                yield b" " * 2**20

        assert httpx.post(f"{server.url}/reset", content=streamed(),
                          headers={"content-type": "application/json"}).status_code == 413
        assert httpx.post(f"{server.url}/reset", json={}).status_code == 200  # and the server goes on


def test_one_shot_http_and_mcp_requests_are_held_to_the_session_bound_and_bad_resets_are_a_422():
    import httpx2 as httpx

    with ThreadedServer(openenv_app(ServeConfig(domain="terminal", model="mock"), max_sessions=1)) as server:
        bad = {"task": "nope/x"}, {"task": 5}, {"context": [1]}, {"seed": "x"}
        for body in bad:
            answer = httpx.post(f"{server.url}/reset", json=body)
            assert answer.status_code == 422 and "Traceback" not in answer.text, (body, answer.text)
            assert isinstance(answer.json()["detail"], str) and "\n" not in answer.json()["detail"]  # one line
        seed = httpx.post(f"{server.url}/reset", json={"seed": "x"}).json()["detail"]
        assert seed.startswith("RequestValidationError: seed: Input should be a valid integer"), seed
        created = httpx.post(f"{server.url}/mcp", json={"jsonrpc": "2.0", "id": 1,
                                                        "method": "openenv/session/create", "params": {}})
        assert created.status_code == 404 and "/ws" in created.json()["detail"]
        with client(server.url) as env:  # the one session: a one-shot reset beside it is refused, not run
            env.reset()
            full = httpx.post(f"{server.url}/reset", json={})
            assert full.status_code == 503 and "--max-sessions" in full.json()["detail"]
        assert httpx.post(f"{server.url}/reset", json={}).status_code == 200


def test_a_frame_that_is_not_a_json_object_is_a_validation_error_and_the_session_goes_on():
    with ThreadedServer(openenv_app(ServeConfig(domain="terminal", model="mock"))) as server:
        with connect(server.url.replace("http", "ws") + "/ws") as socket:
            socket.send('{"type": "reset", "data": {}}')
            assert "user@sandbox" in socket.recv(timeout=10)
            for frame in ("[1, 2]", '"reset"', b"\x00\x01"):
                socket.send(frame)
                assert json.loads(socket.recv(timeout=10))["data"]["code"] == "VALIDATION_ERROR"
            socket.send(json.dumps({"type": "step", "data": LS}))
            assert "mock observation" in socket.recv(timeout=10)


@pytest.mark.skipif(not (shutil.which("tmux") and shutil.which("bwrap")), reason="needs tmux and bubblewrap")
def test_a_huge_duration_neither_stalls_the_real_terminal_nor_raises(tmp_path, monkeypatch):
    """duration 1e9 once held a served session's thread, its sandbox and the server's shutdown for good."""
    import time

    from lwm.envs.real import terminal

    monkeypatch.setattr(terminal, "MAX_WAIT", 1.0)
    config = ServeConfig(domain="terminal", mode="real")
    with ThreadedServer(openenv_app(config)) as server, client(server.url) as env:
        env.reset()
        started = time.monotonic()
        held = env.step({"action": [{"keystrokes": "echo waited\n", "duration": 1e9}]})
        assert time.monotonic() - started < 30 and "waited" in held.observation["text"]
        for bad in (float("inf"), float("nan")):  # sent as Infinity / NaN: the step's error, not an exception
            refused = env.step({"action": [{"keystrokes": "ls\n", "duration": bad}]})
            assert "finite" in refused.observation["info"]["invalid_action"]
        nul = env.step({"action": [{"keystrokes": "a\x00b", "duration": 0.1}]})
        assert "NUL" in nul.observation["info"]["invalid_action"]
        long = env.step({"action": [{"keystrokes": "x" * 200_000, "duration": 0.5}]})  # over exec's 128 KiB
        assert "env_error" not in long.observation["info"] and "xxxx" in long.observation["text"]
        assert "$" in env.step({"action": [{"keystrokes": "C-c", "duration": 0.2}]}).observation["text"]


def _frames(server_url: str):
    """A raw WebSocket on the server: frames sent as written (a JSON escape such as \\ud800 kept as sent)."""
    return connect(server_url.replace("http", "ws") + "/ws", max_size=None)


def _answer(socket) -> dict:
    return json.loads(socket.recv(timeout=60))["data"]


@pytest.mark.skipif(not (shutil.which("tmux") and shutil.which("bwrap")), reason="needs tmux and bubblewrap")
def test_whatever_an_action_holds_the_episode_is_recorded_and_each_step_costs_what_it_says(tmp_path):
    """A lone surrogate once lost the whole episode without a word; 20,000 newlines took 71 s (a tmux call each);
    a duration of 10**400 was an EXECUTION_ERROR; state's step_count counted refused actions."""
    import time

    config = ServeConfig(domain="terminal", mode="real", store=tmp_path / "s")
    with ThreadedServer(openenv_app(config)) as server, _frames(server.url) as socket:
        socket.send('{"type": "reset", "data": {}}')
        assert "user@sandbox" in _answer(socket)["observation"]["text"]
        socket.send('{"type": "step", "data": {"action": [{"keystrokes": "echo \\ud800-ok\\n", "duration": 0.5}]}}')
        assert "\ufffd-ok" in _answer(socket)["observation"]["text"]
        socket.send('{"type": "step", "data": {"action": [{"keystrokes": "ls\\n", "duration": 1' + "0" * 400 + '}]}}')
        assert "finite" in _answer(socket)["observation"]["info"]["invalid_action"]
        started = time.monotonic()
        socket.send(json.dumps({"type": "step", "data": {"action": [{"keystrokes": "\n" * 100_000, "duration": 0}]}}))
        assert "env_error" not in _answer(socket)["observation"]["info"]
        assert time.monotonic() - started < 30  # was: ~295 s, one tmux call per newline
        socket.send('{"type": "state"}')
        assert _answer(socket)["step_count"] == 2  # the refused duration is no turn
    (recorded,) = read_trajectories(tmp_path / "s")
    assert len(recorded.turns) == 2 and recorded.turns[0].action.content[0]["keystrokes"] == "echo \ufffd-ok\n"


@pytest.mark.skipif(not (shutil.which("tmux") and shutil.which("bwrap")), reason="needs tmux and bubblewrap")
def test_sigterm_ends_a_step_in_flight_at_once_and_the_episode_is_recorded(tmp_path):
    """SIGTERM during a step waiting out its 60 s cap once took 59.4 s to stop the server."""
    import signal
    import socket as sockets
    import subprocess
    import sys
    import time
    from pathlib import Path

    with sockets.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    lwm = str(Path(sys.executable).with_name("lwm"))
    server = subprocess.Popen([lwm, "serve", "openenv", "--real", "--port", str(port), "--store", str(tmp_path / "s")],
                              stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                socket = _frames(url)
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "the server did not start"
                time.sleep(0.2)
        with socket:
            socket.send('{"type": "reset", "data": {}}')
            _answer(socket)
            socket.send(json.dumps({"type": "step", "data": {"action": [{"keystrokes": "echo one\n",
                                                                         "duration": 0.5}]}}))
            _answer(socket)
            socket.send(json.dumps({"type": "step", "data": {"action": [{"keystrokes": "sleep 1000\n",
                                                                         "duration": 1e9}]}}))
            time.sleep(1.0)  # the step is waiting out its duration
            started = time.monotonic()
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=120)
            stopped = time.monotonic() - started
    finally:
        server.kill()
    assert stopped < 20, f"the server took {stopped:.1f} s to stop"
    (recorded,) = read_trajectories(tmp_path / "s")
    assert recorded.turns[0].action.content[0]["keystrokes"] == "echo one\n"


@pytest.mark.parametrize("mode", ["sim", "real"])
def test_random_frames_each_get_an_answer_and_the_episode_is_recorded_once(mode, tmp_path, monkeypatch):
    """A seeded fuzz of the WebSocket face (``lwm.testing.fuzz``): every frame answered (an observation, the
    state, or an error), the session alive to the end, and its episode stored once with every accepted turn."""
    import os
    import random

    from lwm.envs.real import terminal
    from lwm.testing import fuzz

    if mode == "real" and not (shutil.which("tmux") and shutil.which("bwrap")):
        pytest.fail("the real terminal needs tmux and bubblewrap: run `lwm setup terminal`")
    monkeypatch.setattr(terminal, "MAX_WAIT", 0.5)
    rng = random.Random(f"{os.environ.get('LWM_FUZZ_SEED', '0')}-openenv-{mode}")
    config = ServeConfig(domain="terminal", **({"mode": "real"} if mode == "real" else {"model": "mock"}),
                         store=tmp_path / "s")
    steps = 0
    with ThreadedServer(openenv_app(config)) as server, _frames(server.url) as socket:
        socket.send('{"type": "reset", "data": {}}')
        _answer(socket)
        for _ in range(int(os.environ.get("LWM_FUZZ_STEPS", "30")) * 2):
            socket.send(fuzz.frame(rng, fuzz.keystrokes(rng)))
            answer = json.loads(socket.recv(timeout=60))
            assert answer["type"] in ("observation", "state", "error"), answer
            if answer["type"] == "observation":
                steps += "invalid_action" not in answer["data"]["observation"]["info"]
        socket.send('{"type": "state"}')
        assert _answer(socket)["step_count"] == steps
    (recorded,) = read_trajectories(tmp_path / "s")
    assert len(recorded.turns) == steps
