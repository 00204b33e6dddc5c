"""Serving beyond loopback needs a token; without it, HTTP gets 401 and WebSocket is closed."""

import httpx2 as httpx
import pytest

pytest.importorskip("openenv.core")
from openenv.core import GenericEnvClient  # noqa: E402
from typer.testing import CliRunner  # noqa: E402
from websockets.exceptions import InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from lwm.cli import app  # noqa: E402
from lwm.serve.auth import TokenCheck, UnsafeBind, check_bind  # noqa: E402
from lwm.serve.openenv import openenv_app  # noqa: E402
from lwm.serve.session import ServeConfig  # noqa: E402
from lwm.testing.asgi import ThreadedServer  # noqa: E402

TOKEN = "s3cret-token"


def test_a_non_loopback_bind_needs_a_token():
    check_bind("127.0.0.1", None)
    check_bind("localhost", None)
    check_bind("0.0.0.0", TOKEN)
    with pytest.raises(UnsafeBind, match="--token"):
        check_bind("0.0.0.0", None)
    result = CliRunner().invoke(app, ["serve", "openenv", "--host", "0.0.0.0", "--model", "mock"])
    assert result.exit_code == 2 and result.output.startswith("lwm: error: --host 0.0.0.0")


def test_requests_without_the_token_are_rejected_and_with_it_served():
    guarded = TokenCheck(openenv_app(ServeConfig(domain="terminal", model="mock")), TOKEN)
    with ThreadedServer(guarded) as server:
        assert httpx.get(f"{server.url}/health").status_code == 401
        assert httpx.get(f"{server.url}/health", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert httpx.get(f"{server.url}/health", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert httpx.get(f"{server.url}/t/{TOKEN}/health").status_code == 200
        with pytest.raises(InvalidStatus, match="403"):  # the handshake is refused
            connect(server.url.replace("http", "ws") + "/ws")
        with GenericEnvClient(base_url=f"{server.url}/t/{TOKEN}").sync() as env:  # a client without headers
            assert env.reset().observation["text"] == "user@sandbox:~$ "


def ws_handshake(port: int, host: str) -> str:
    """The status line a WebSocket handshake naming ``host`` gets (a client library sets Host itself)."""
    import socket as sockets

    with sockets.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall((f"GET /ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        return sock.recv(4096).decode("latin-1").split("\r\n", 1)[0]


def test_a_loopback_server_refuses_other_hosts_and_cross_origin_clients():
    """A web page the user opens can reach 127.0.0.1: a cross-origin WebSocket or a rebound Host is refused."""
    from lwm.serve.auth import is_loopback_name, protect

    assert is_loopback_name("127.0.0.1:8000") and is_loopback_name("localhost") and is_loopback_name("[::1]:80")
    assert not is_loopback_name("evil.example:8000") and not is_loopback_name("127.0.0.1.evil.example")
    with ThreadedServer(protect(openenv_app(ServeConfig(domain="terminal", model="mock")), "127.0.0.1", None)) as server:
        ws = server.url.replace("http", "ws") + "/ws"
        assert httpx.post(f"{server.url}/reset", json={}, headers={"Host": "evil.example"}).status_code == 421
        assert httpx.post(f"{server.url}/reset", json={},
                          headers={"Origin": "http://evil.example"}).status_code == 403
        for origin in ("http://evil.example", "null", "http://127.0.0.1.evil.example:80",
                       f"http://127.0.0.1:{server.port + 1}", "http://localhost",  # another local web app
                       f"http://127.0.0.2:{server.port}"):  # another loopback address: another server
            with pytest.raises(InvalidStatus, match="403"):
                connect(ws, origin=origin)
        assert ws_handshake(server.port, "evil.example").startswith("HTTP/1.1 403")  # a rebound name
        assert ws_handshake(server.port, f"127.0.0.1:{server.port}").startswith("HTTP/1.1 101")
        # what loopback clients send still works: no Origin (openenv-core's client), or a local page's
        with connect(ws, origin=f"http://localhost:{server.port}") as socket:
            socket.send('{"type": "reset", "data": {}}')
            assert "user@sandbox" in socket.recv(timeout=10)
        with GenericEnvClient(base_url=server.url).sync() as env:
            assert env.reset().observation["text"] == "user@sandbox:~$ "
        assert httpx.post(f"{server.url}/reset", json={}).status_code == 200


def test_the_served_command_refuses_cross_origin_clients(tmp_path):
    """The guard is on in what `lwm serve openenv` runs, not only in the app a test builds."""
    import socket as sockets
    import subprocess
    import sys
    import time

    with sockets.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    from pathlib import Path

    lwm = str(Path(sys.executable).with_name("lwm"))
    server = subprocess.Popen([lwm, "serve", "openenv", "--model", "mock", "--port", str(port)],
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and server.poll() is None, "the server did not start"
                time.sleep(0.2)
        assert httpx.get(f"http://127.0.0.1:{port}/health", headers={"Host": "evil.example"}).status_code == 421
        with pytest.raises(InvalidStatus, match="403"):
            connect(f"ws://127.0.0.1:{port}/ws", origin="http://evil.example")
        for _ in range(3):  # clients that vanish mid-answer
            socket = connect(f"ws://127.0.0.1:{port}/ws")
            socket.send('{"type": "step", "data": {"action": [{"keystrokes": "ls\\n"}]}}')
            socket.socket.shutdown(sockets.SHUT_RDWR)
            socket.socket.close()
        time.sleep(1)
    finally:
        server.terminate()
        _, log = server.communicate(timeout=10)
    assert "Traceback" not in log and len(log.strip().splitlines()) <= 2, log  # the banner, at most one more line


@pytest.mark.parametrize("gone", ["WebSocketDisconnected", "ClientDisconnected", "WebSocketDisconnect"])
def test_a_client_gone_before_its_answer_is_one_log_line_not_a_traceback(gone, caplog):
    """OpenEnv answering a step whose client had left raised starlette's WebSocketDisconnected: 92 lines of
    "Exception in ASGI application" where docs/serving.md promises none. Anything else still raises."""
    import asyncio
    import logging

    import starlette.websockets
    import uvicorn.protocols.utils

    from lwm.serve.auth import QuietDisconnects

    kinds = {"WebSocketDisconnected": starlette.websockets.WebSocketDisconnected,
             "ClientDisconnected": uvicorn.protocols.utils.ClientDisconnected,
             "WebSocketDisconnect": starlette.websockets.WebSocketDisconnect}

    def raising(kind):
        async def app(scope, receive, send):
            raise kind("gone")
        return app

    scope = {"type": "websocket", "client": ("127.0.0.1", 5)}
    with caplog.at_level(logging.INFO, logger="lwm.serve"):
        asyncio.run(QuietDisconnects(raising(kinds[gone]))(scope, None, None))
    assert "disconnected" in caplog.text
    with pytest.raises(RuntimeError, match="a real error"):
        asyncio.run(QuietDisconnects(raising(lambda _: RuntimeError("a real error")))(scope, None, None))
