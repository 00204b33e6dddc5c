"""Who may talk to a served environment: loopback by default, a bearer token for anything else.

``TokenGuard`` is plain ASGI so it covers HTTP and WebSocket alike. A client sends the token as
``Authorization: Bearer <token>``, or — for clients that cannot set headers, such as OpenEnv's
WebSocket client — as the first path segments ``/t/<token>``, i.e. ``base_url=http://host:port/t/<token>``.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from typing import Any

PREFIX = "/t/"


class UnsafeBind(ValueError):
    pass


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return all(ipaddress.ip_address(info[4][0]).is_loopback for info in socket.getaddrinfo(host, None))
        except OSError:
            return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve beyond this machine without a token."""
    if not is_loopback(host) and not token:
        raise UnsafeBind(f"--host {host} is reachable from other machines: give --token (clients then send "
                         "'Authorization: Bearer <token>' or use base URL http://HOST:PORT/t/<token>)")


class TokenGuard:
    """ASGI middleware: requests without the token get 401 (HTTP) or a closed socket (WebSocket, 1008)."""

    def __init__(self, app: Any, token: str):
        self.app, self.token = app, token

    def _authorised(self, scope: dict[str, Any]) -> dict[str, Any] | None:
        """The scope to pass on (the path prefix removed), or None when the token is missing or wrong."""
        headers = dict(scope.get("headers") or [])
        bearer = headers.get(b"authorization", b"").decode("latin-1")
        if bearer.startswith("Bearer ") and hmac.compare_digest(bearer[7:].encode(), self.token.encode()):
            return scope
        path: str = scope.get("path", "")
        if path.startswith(PREFIX):
            given, _, rest = path[len(PREFIX):].partition("/")
            if hmac.compare_digest(given.encode(), self.token.encode()):
                return {**scope, "path": "/" + rest, "raw_path": ("/" + rest).encode()}
        return None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        allowed = self._authorised(scope)
        if allowed is not None:
            return await self.app(allowed, receive, send)
        if scope["type"] == "websocket":
            await receive()  # the connect message
            await send({"type": "websocket.close", "code": 1008, "reason": "missing or wrong token"})
            return None
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
        await send({"type": "http.response.body", "body": b'{"detail": "missing or wrong token"}'})
        return None
