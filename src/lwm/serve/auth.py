"""Who may talk to a served environment: loopback by default, a bearer token for anything else.

A loopback server is still reachable from any web page the user opens (a cross-origin WebSocket, or DNS
rebinding a name to 127.0.0.1), so ``LocalOnly`` refuses requests whose ``Host`` is not a loopback name
(421) or whose ``Origin`` is another site or another port of this one (403), as the MCP SDK's transport
security does for the MCP face.

``TokenCheck`` is plain ASGI so it covers HTTP and WebSocket alike. A client sends the token as
``Authorization: Bearer <token>``, or — for clients that cannot set headers, such as OpenEnv's
WebSocket client — as the first path segments ``/t/<token>``, i.e. ``base_url=http://host:port/t/<token>``.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import socket
from typing import Any

PREFIX = "/t/"
log = logging.getLogger("lwm.serve")


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


def _hostname(authority: str) -> str:
    """``host`` of ``host[:port]`` or ``[v6]:port``."""
    if authority.startswith("["):
        return authority[1:].partition("]")[0]
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


def _port(authority: str, scheme: str = "http") -> str:
    """The port of ``host[:port]`` / ``[v6]:port``, or the scheme's default."""
    rest = authority.rpartition("]")[2] if authority.startswith("[") else authority
    port = rest.rpartition(":")[2] if rest.count(":") == 1 else ""
    return port or ("443" if scheme in ("https", "wss") else "80")


def is_loopback_name(authority: str) -> bool:
    """A Host header or origin authority naming this machine by a loopback name (no name lookup: a
    rebinding attacker controls DNS)."""
    host = _hostname(authority.strip().lower())
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def refuse(scope: dict[str, Any], receive: Any, send: Any, status: int, reason: str,
                 headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """HTTP: ``status`` with a JSON reason; WebSocket: the handshake is refused (the client sees 403)."""
    if scope["type"] == "websocket":
        await receive()  # the connect message
        await send({"type": "websocket.close", "code": 1008, "reason": reason})
        return
    body = json.dumps({"detail": reason}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": body})


THIS_MACHINE = ("localhost", "127.0.0.1", "::1")
"""The names a page on this server's own origin may use besides the Host it was reached by."""


class LocalOnly:
    """ASGI middleware for a loopback server: only requests addressed to a loopback name, from no origin
    or a loopback one, reach the app."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        if not is_loopback_name(host):
            return await refuse(scope, receive, send, 421, "Host must name this machine (127.0.0.1 or localhost)")
        origin = headers.get(b"origin")
        if origin is not None:  # browsers send it; "null" (a sandboxed page, a file) is an origin too
            scheme, _, authority = origin.decode("latin-1").partition("://")
            # same origin only: another port, or another loopback address (127.0.0.2), is another local web app
            named = _hostname(authority.strip().lower())
            if scheme not in ("http", "https") or named not in {*THIS_MACHINE, _hostname(host.strip().lower())} \
                    or _port(authority, scheme) != _port(host):
                return await refuse(scope, receive, send, 403, "cross-origin requests are refused")
        return await self.app(scope, receive, send)


MAX_BODY = 8 * 2**20
"""The largest HTTP request body a served environment reads (an action, a reset's context): 8 MiB."""


class BodyLimit:
    """ASGI middleware: an HTTP body over ``limit`` bytes gets 413 — by its Content-Length before anything is
    read, or once a streamed body passes the limit."""

    def __init__(self, app: Any, limit: int = MAX_BODY):
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length", b"0")
        if int(length or 0) > self.limit if length.isdigit() else False:
            return await refuse(scope, receive, send, 413, f"request body over {self.limit} bytes")
        seen, started, refused = 0, False, False

        async def bounded() -> dict[str, Any]:
            nonlocal seen, refused
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit and not refused:
                refused = True
                if not started:
                    await refuse(scope, receive, send, 413, f"request body over {self.limit} bytes")
                return {"type": "http.disconnect"}  # the app stops reading; its answer is dropped below
            return message

        async def sending(message: dict[str, Any]) -> None:
            nonlocal started
            if refused:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, bounded, sending)


class QuietDisconnects:
    """ASGI middleware: a WebSocket client that goes away mid-answer is one log line, not a traceback."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)
        from starlette.websockets import WebSocketDisconnect

        try:
            await self.app(scope, receive, send)
        except (WebSocketDisconnect, ConnectionError) as exc:
            log.info("client %s disconnected: %s", scope.get("client"), type(exc).__name__)
        except Exception as exc:
            # uvicorn's ClientDisconnected, or starlette's WebSocketDisconnected (a RuntimeError): a send after the
            # client left, such as OpenEnv answering a step whose client had gone
            if type(exc).__name__ not in ("ClientDisconnected", "WebSocketDisconnected"):
                raise
            log.info("client %s disconnected before its answer was sent", scope.get("client"))


def protect(app: Any, host: str, token: str | None) -> Any:
    """The app as served on ``host``: bodies bounded, disconnects quiet, behind the token when there is one,
    local-only when bound to loopback."""
    app = QuietDisconnects(BodyLimit(app))
    if token:
        app = TokenCheck(app, token)
    return LocalOnly(app) if is_loopback(host) else app


class TokenCheck:
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
        return await refuse(scope, receive, send, 401, "missing or wrong token", ((b"www-authenticate", b"Bearer"),))
