"""Any ASGI app served by uvicorn in a background thread on 127.0.0.1, for tests and benchmarks."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any


class ThreadedServer:
    """``with ThreadedServer(app) as server: server.url`` — started on a free port (or ``port``), stopped on exit."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0, lifespan: str = "off"):
        self.app, self.host, self.port, self.lifespan = app, host, port, lifespan
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> ThreadedServer:
        import uvicorn

        # IPPROTO_TCP spelled out: asyncio sets TCP_NODELAY on accepted connections only when the listening
        # socket says so, and without it every keep-alive request waits ~40 ms for a delayed ACK.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="critical", lifespan=self.lifespan, timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"server for {type(self.app).__name__} did not start")
            time.sleep(0.01)
        return self

    def wait(self) -> None:
        """Block until the server stops or Ctrl+C."""
        assert self._thread is not None, "start() first"
        try:
            while self._thread.is_alive():
                self._thread.join(0.5)
        except KeyboardInterrupt:
            self.stop()

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> ThreadedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
