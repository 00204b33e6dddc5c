"""Serving beyond loopback needs a token; without it, HTTP gets 401 and WebSocket is closed."""

import httpx
import pytest

pytest.importorskip("openenv.core")
from openenv.core import GenericEnvClient  # noqa: E402
from typer.testing import CliRunner  # noqa: E402
from websockets.exceptions import InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from lwm.cli import app  # noqa: E402
from lwm.serve.auth import TokenGuard, UnsafeBind, check_bind  # noqa: E402
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
    guarded = TokenGuard(openenv_app(ServeConfig(domain="terminal", model="mock")), TOKEN)
    with ThreadedServer(guarded) as server:
        assert httpx.get(f"{server.url}/health").status_code == 401
        assert httpx.get(f"{server.url}/health", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert httpx.get(f"{server.url}/health", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert httpx.get(f"{server.url}/t/{TOKEN}/health").status_code == 200
        with pytest.raises(InvalidStatus, match="403"):  # the handshake is refused
            connect(server.url.replace("http", "ws") + "/ws")
        with GenericEnvClient(base_url=f"{server.url}/t/{TOKEN}").sync() as env:  # a client without headers
            assert env.reset().observation["text"] == "user@lwm:~$ "
