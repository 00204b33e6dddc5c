"""The openai backend against a real HTTP server on 127.0.0.1, one test per injected fault."""

import asyncio
import time

import pytest

from lwm.backends import BackendError, GenerateConfig
from lwm.backends.openai import OpenAIBackend
from lwm.testing.openai_server import ScriptedServer

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
CONFIG = GenerateConfig(temperature=0.0, seed=7, max_tokens=64)


def backend(server: ScriptedServer, **options) -> OpenAIBackend:
    options = {"backoff": 0.01, "max_backoff": 0.2, "timeout": 2.0, "max_retries": 3} | options
    return OpenAIBackend("scripted", base_url=server.base_url, api_key="k", **options)


async def test_plain_answer_and_request_body(server):
    gen = await backend(server).generate(MESSAGES, CONFIG)
    assert "<predicted_observation>scripted observation" in gen.text
    assert gen.prompt_tokens is not None and gen.finish_reason == "stop"
    body = server.requests[-1]
    assert body["model"] == "scripted" and body["seed"] == 7 and body["max_tokens"] == 64
    assert body["messages"] == MESSAGES


async def test_reasoning_content_field_is_separated():
    with ScriptedServer(["<think>plan it</think><predicted_observation>x</predicted_observation>"],
                        reasoning_field=True) as srv:
        gen = await backend(srv).generate(MESSAGES, CONFIG)
    assert gen.reasoning == "plan it"
    assert gen.text == "<predicted_observation>x</predicted_observation>"


async def test_latency_is_waited_out(server):
    server.inject("latency", seconds=0.3)
    start = time.monotonic()
    gen = await backend(server).generate(MESSAGES, CONFIG)
    assert time.monotonic() - start >= 0.3 and gen.text


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_5xx_is_retried(server, status):
    server.inject("status", status=status, times=2)
    gen = await backend(server).generate(MESSAGES, CONFIG)
    assert gen.text and len(server.requests) == 3


async def test_429_is_retried_after_the_servers_hint(server):
    server.inject("status", status=429, retry_after=0.15)
    start = time.monotonic()
    gen = await backend(server).generate(MESSAGES, CONFIG)
    assert gen.text and len(server.requests) == 2
    assert time.monotonic() - start >= 0.15


async def test_dropped_connection_is_retried(server):
    server.inject("drop")
    gen = await backend(server).generate(MESSAGES, CONFIG)
    assert gen.text and len(server.requests) == 2


async def test_malformed_body_is_retried(server):
    server.inject("malformed")
    gen = await backend(server).generate(MESSAGES, CONFIG)
    assert gen.text and len(server.requests) == 2


async def test_malformed_body_every_time_gives_a_clear_error(server):
    server.inject("malformed", times=10)
    with pytest.raises(BackendError, match="malformed response.*gave up after 2 attempts"):
        await backend(server, max_retries=1).generate(MESSAGES, CONFIG)


async def test_slow_stream_past_the_deadline_is_cut_and_retried(server):
    server.inject("slow_stream", seconds=3.0)
    start = time.monotonic()
    gen = await backend(server, timeout=0.5).generate(MESSAGES, CONFIG)
    assert gen.text and len(server.requests) == 2
    assert time.monotonic() - start < 2.5


async def test_slow_stream_within_the_deadline_is_read_whole(server):
    server.inject("slow_stream", seconds=0.3)
    gen = await backend(server).generate(MESSAGES, CONFIG)
    assert "scripted observation" in gen.text and len(server.requests) == 1


async def test_hang_times_out_and_gives_up_without_hanging(server):
    server.inject("hang", seconds=30, times=10)
    start = time.monotonic()
    with pytest.raises(BackendError, match="no complete answer within 0.3s"):
        await backend(server, timeout=0.3, max_retries=1).generate(MESSAGES, CONFIG)
    assert time.monotonic() - start < 3


async def test_persistent_500_gives_a_clear_error(server):
    server.inject("status", status=500, times=100)
    with pytest.raises(BackendError, match=r"HTTP 500: injected HTTP 500 \(gave up after 4 attempts\)"):
        await backend(server).generate(MESSAGES, CONFIG)
    assert len(server.requests) == 4


@pytest.mark.parametrize("status", [400, 401, 404])
async def test_client_errors_are_not_retried(server, status):
    server.inject("status", status=status)
    with pytest.raises(BackendError, match=f"HTTP {status}"):
        await backend(server).generate(MESSAGES, CONFIG)
    assert len(server.requests) == 1


async def test_no_server_listening_gives_a_clear_error():
    with ScriptedServer() as srv:
        url = srv.base_url
    dead = OpenAIBackend("m", base_url=url, backoff=0.01, max_backoff=0.05, max_retries=2, timeout=1)
    with pytest.raises(BackendError, match="connection failed"):
        await dead.generate(MESSAGES, CONFIG)


async def test_concurrency_is_limited():
    with ScriptedServer(latency=0.1) as srv:
        b = backend(srv, concurrency=3)
        results = await asyncio.gather(*(b.generate(MESSAGES, CONFIG) for _ in range(10)))
        assert len(results) == 10 and srv.max_in_flight == 3


def test_base_url_and_key_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "secret")
    b = OpenAIBackend("m")
    assert b.base_url == "http://127.0.0.1:9/v1" and b.api_key == "secret"
    assert OpenAIBackend("m", base_url="http://127.0.0.1:1/v1").base_url == "http://127.0.0.1:1/v1"


async def test_requests_spread_over_several_servers_and_a_failing_one_is_passed_over():
    with ScriptedServer(latency=0.05) as one, ScriptedServer(latency=0.05) as two:
        both = OpenAIBackend("scripted", base_url=f"{one.base_url},{two.base_url}", api_key="k", concurrency=4,
                             backoff=0.01, max_backoff=5.0, max_retries=2)
        sessions = [[{"role": "system", "content": "s"}, {"role": "user", "content": f"session {i}"}]
                    for i in range(16)]
        answers = await asyncio.gather(*(both.generate(m, CONFIG) for m in sessions))
        assert len(answers) == 16 and len(one.requests) >= 4 and len(two.requests) >= 4  # both served
        again = await both.generate(sessions[3], CONFIG)  # a session stays on its server (its prefix cache)
        assert again.text and sum(r["messages"] == sessions[3] for r in one.requests) in (0, 2)
        one.inject("status", status=500, times=100)
        before = len(two.requests)
        answers = await asyncio.gather(*(both.generate(m, CONFIG) for m in sessions))
        assert all(a.text for a in answers)  # every request answered: retried on the healthy server
        assert len(two.requests) - before >= 16 and len(one.requests) < 16 + 16  # the failing one rested
        await both.aclose()


def test_the_scripted_server_streams_when_asked_as_openai_does():
    """Clients that stream (verifiers' interception does) get SSE chunks, the usage when asked, and [DONE]."""
    import openai

    with ScriptedServer(["hello there"]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x")
        chunks = list(client.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "hi"}],
                                                     stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "hello there" and [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_a_world_model_left_unclosed_after_its_loop_ended_goes_without_a_warning(server, recwarn, caplog):
    """A script's last line: ``asyncio.run(...)`` returned and nobody closed the backend. Its pooled connections
    ended with the loop; nothing is logged or warned when it is collected (aiohttp would say "Unclosed")."""
    import gc

    b = backend(server)
    assert asyncio.run(b.generate(MESSAGES, CONFIG)).text
    del b
    gc.collect()
    assert not [w for w in recwarn if "Unclosed" in str(w.message)]
    assert "Unclosed" not in caplog.text


def test_the_proxy_named_by_the_environment_is_used_unless_no_proxy_covers_the_host(server, monkeypatch):
    """Proxies come from HTTP(S)_PROXY / NO_PROXY as with any HTTP client, read once per client, not per request:
    here a real forwarding proxy on loopback counts what passes through it."""
    import http.server
    import threading
    import urllib.request

    seen: list[str] = []
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # the proxy's own requests go straight

    class Proxy(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # a plain-HTTP proxy gets the absolute URL as the request target
            seen.append(self.path)
            body = self.rfile.read(int(self.headers["content-length"]))
            request = urllib.request.Request(self.path, data=body, headers={"content-type": "application/json"})
            with direct.open(request, timeout=5) as answer:
                payload = answer.read()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_port}")
        monkeypatch.setenv("NO_PROXY", "")
        monkeypatch.setattr(urllib.request, "proxy_bypass", lambda host: False)  # the stdlib bypasses loopback
        assert asyncio.run(backend(server).generate(MESSAGES, CONFIG)).text
        assert seen == [f"{server.base_url}/chat/completions"]
        monkeypatch.setattr(urllib.request, "proxy_bypass", lambda host: host == "127.0.0.1")
        assert asyncio.run(backend(server).generate(MESSAGES, CONFIG)).text
        assert len(seen) == 1  # the host NO_PROXY covers is reached directly
    finally:
        proxy.shutdown()
