"""Any OpenAI-compatible chat server: vLLM, SGLang, llama-server, OpenAI itself.

Talks the wire format directly over aiohttp (a request costs its client ~0.6 ms of CPU where httpx2 takes
~2 ms: on a small machine at concurrency 32 that is what a run waits for) so that every failure mode is ours
to handle: a bounded number of concurrent requests, a hard deadline per attempt (a trickling response cannot
hang a run),
retries with exponential backoff and jitter on 429, 5xx, dropped connections, timeouts and malformed
bodies (honouring ``Retry-After``), and a clear error for everything that retrying cannot fix.

``base_url`` may name several servers of the same model (comma-separated: one vLLM server per GPU or per
node): each request goes to the one with the fewest requests in flight and the fewest recent failures,
keeping a session on one server while that is no worse (its prefix cache), and a retry tries the others
first. ``concurrency`` is per server.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import os
import random
import ssl
import time
import urllib.parse
import urllib.request
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import aiohttp
import httpx2 as httpx
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

from lwm.backends.base import BackendError, BackendInfo, GenerateConfig, Generation, Message, approx_tokens
from lwm.registry import register

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"


class RetryableError(BackendError):
    """A failure worth another try; ``retry_after`` is the server's hint in seconds, if any."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


@register("backend", "openai")
class OpenAIBackend:
    compact_prompts = False

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int = 16,
        timeout: float = 300.0,
        max_retries: int = 5,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        context_window: int | None = None,
    ):
        self.model = model
        self.name = f"openai:{model}"
        urls = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self.base_urls = [u.strip().rstrip("/") for u in (urls.split(",") if isinstance(urls, str) else urls)
                          if u.strip()]
        self.base_url = self.base_urls[0]
        self.in_flight = [0] * len(self.base_urls)
        self.failures = [0] * len(self.base_urls)  # consecutive, per server
        self.resting_until = [0.0] * len(self.base_urls)  # a failing server is passed over for a while
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.context_window = context_window
        self._per_loop: dict[asyncio.AbstractEventLoop, list[Server]] = {}

    @classmethod
    def from_spec(cls, model: str | None, **options: Any) -> OpenAIBackend:
        if not model:
            raise ValueError("the openai backend needs a model name: openai:<model>, e.g. openai:gpt-4o-mini")
        return cls(model, **options)

    @classmethod
    def info(cls, base_url: str | None = None) -> BackendInfo:
        """Usable only if a server answers ``GET /models`` within 2 s: a listed backend must work."""
        url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).split(",")[0].strip().rstrip("/")
        key = os.environ.get("OPENAI_API_KEY") or "EMPTY"
        try:
            response = httpx.get(f"{url}/models", headers={"Authorization": f"Bearer {key}"}, timeout=2.0)
            response.raise_for_status()
            served = [m["id"] for m in response.json()["data"]]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            return BackendInfo(name="openai", usable=False, example="openai:Qwen/Qwen-AgentWorld-35B-A3B",
                               detail=f"no OpenAI-compatible server answers at {url}/models ({type(exc).__name__}); "
                                      "start one, or give --base-url / OPENAI_BASE_URL")
        shown = ", ".join(served[:3]) + (f" (+{len(served) - 3} more)" if len(served) > 3 else "")
        return BackendInfo(name="openai", usable=bool(served), detail=f"server at {url} serves {shown or 'no models'}",
                           example=f"openai:{served[0]}" if served else "openai:MODEL")

    def _session(self) -> list[Server]:
        """A client and a limit per server and event loop: a client's connections belong to one loop. Proxies
        (``HTTPS_PROXY``, ``NO_PROXY``) and certificates come from the environment, read once here: aiohttp's
        ``trust_env`` reads them again for every request, which triples its CPU per request."""
        loop = asyncio.get_running_loop()
        if loop not in self._per_loop:
            self._per_loop[loop] = [Server(aiohttp.ClientSession(
                headers={"Authorization": f"Bearer {self.api_key}"},
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=min(self.timeout, 10.0)),  # total: _post's
                connector=_Connector(limit=self.concurrency, ssl=_ssl_context()),
            ), asyncio.Semaphore(self.concurrency), _env_proxy(url)) for url in self.base_urls]
        return self._per_loop[loop]

    def _pick(self, messages: list[Message], tried: set[int]) -> int:
        """The server for this attempt: untried before tried, then not resting after failures, then fewest in
        flight; the session's own server (by its first messages) when it is about as good as the best."""
        n = len(self.base_urls)
        if n == 1:
            return 0
        head = json.dumps(messages[:2], sort_keys=True).encode()
        home = int.from_bytes(hashlib.blake2b(head, digest_size=4).digest(), "big") % n
        now = time.monotonic()
        rank = [(i in tried, now < self.resting_until[i], self.in_flight[i]) for i in range(n)]
        best = min(rank)
        return home if rank[home] <= (best[0], best[1], best[2] + 1) else rank.index(best)

    def _backoff(self, failed: int, exc: BaseException | None) -> float:
        """Seconds to wait after the ``failed``-th attempt: random exponential (full jitter), at least the
        server's ``Retry-After``, at most ``max_backoff``."""
        base = random.uniform(0, min(self.max_backoff, self.backoff * 2.0 ** (failed - 1)))
        return min(max(base, getattr(exc, "retry_after", None) or 0.0), self.max_backoff)

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Generation:
        body: dict[str, Any] = {"model": self.model, "messages": messages,
                                "temperature": config.temperature, "max_tokens": config.max_tokens}
        if config.seed is not None:
            body["seed"] = config.seed
        if config.top_p is not None:
            body["top_p"] = config.top_p
        if config.stop:
            body["stop"] = list(config.stop)
        if config.json_only:
            body["response_format"] = {"type": "json_object"}
        servers = self._session()
        tried: set[int] = set()
        try:  # the first attempt outside tenacity: most requests need no retry, and its machinery costs ~0.1 ms
            return await self._attempt(servers, messages, body, tried)
        except RetryableError as exc:
            if self.max_retries < 1:
                raise BackendError(f"{exc} (gave up after 1 attempt)") from exc
            await asyncio.sleep(self._backoff(1, exc))
        retrying = AsyncRetrying(  # attempts 2 and on
            stop=stop_after_attempt(self.max_retries),
            wait=lambda state: self._backoff(state.attempt_number + 1, state.outcome and state.outcome.exception()),
            retry=retry_if_exception(lambda e: isinstance(e, RetryableError)),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await self._attempt(servers, messages, body, tried)
        except RetryableError as exc:
            raise BackendError(f"{exc} (gave up after {self.max_retries + 1} attempts)") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    async def _attempt(self, servers: list[Server], messages: list[Message],
                       body: dict[str, Any], tried: set[int]) -> Generation:
        """One request to the server ``_pick`` chooses, counted in its in-flight and failure tallies."""
        i = self._pick(messages, tried)
        tried.add(i)
        server = servers[i]
        self.in_flight[i] += 1
        try:
            async with server.limit:
                answer = await self._post(server, body, self.base_urls[i])
        except RetryableError:
            self.failures[i] += 1
            self.resting_until[i] = time.monotonic() + min(2.0 ** self.failures[i], self.max_backoff)
            raise
        finally:
            self.in_flight[i] -= 1
        self.failures[i] = 0
        return answer

    async def _post(self, server: Server, body: dict[str, Any], base_url: str) -> Generation:
        url = f"{base_url}/chat/completions"
        try:
            async with asyncio.timeout(self.timeout), server.client.post(url, json=body,
                                                                         proxy=server.proxy) as response:
                answer = Answer(response.status, response.reason or "", response.headers, await response.read())
        except TimeoutError:
            raise RetryableError(f"{url}: no complete answer within {self.timeout:g}s") from None
        except aiohttp.ClientError as exc:
            raise RetryableError(f"{url}: connection failed: {type(exc).__name__}: {exc}") from None
        if answer.status == 429 or answer.status >= 500:
            raise RetryableError(f"{url}: HTTP {answer.status}: {answer.error_text()}", answer.retry_after())
        if answer.status >= 400:
            raise BackendError(f"{url}: HTTP {answer.status}: {answer.error_text()}")
        return answer.completion(url)

    def count_tokens(self, text: str) -> int:
        return approx_tokens(text)

    async def aclose(self) -> None:
        """Close every loop's clients: this loop's here, a loop running in another thread there, an idle
        thread's loop (a served session's worker) by running it once in a helper thread."""
        sessions, self._per_loop = self._per_loop, {}
        current = asyncio.get_running_loop()
        for loop, servers in sessions.items():
            closing = _close_all([server.client for server in servers])
            if loop is current:
                await closing
            elif loop.is_running():
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.wrap_future(asyncio.run_coroutine_threadsafe(closing, loop)), 5)
            elif not loop.is_closed():
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(loop.run_until_complete, closing)
            else:  # its loop is gone, and its sockets with it: nothing left to close
                closing.close()
                for server in servers:
                    server.client.detach()


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context per process, as httpx would make it (``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured): loading
    the certificates costs ~40 ms, which every new client (one per event loop) would otherwise pay."""
    return httpx.create_ssl_context()


class Server(NamedTuple):
    """One model server as one event loop reaches it."""

    client: aiohttp.ClientSession
    limit: asyncio.Semaphore
    proxy: str | None


def _env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (none where ``NO_PROXY`` covers its host)."""
    parts = urllib.parse.urlsplit(url)
    if urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return urllib.request.getproxies().get(parts.scheme)


class _Connector(aiohttp.TCPConnector):
    """A connection pool that goes quietly once its event loop has ended (``asyncio.run`` returned and nobody
    closed the world model: a script's last line): its sockets ended with the loop, as httpx's do, and there is
    nothing left to warn about."""

    @property
    def closed(self) -> bool:
        return super().closed or self._loop.is_closed()

    def __del__(self, _warnings: Any = warnings) -> None:
        if not self._loop.is_closed():
            super().__del__(_warnings)


async def _close_all(clients: list[aiohttp.ClientSession]) -> None:
    for client in clients:
        await client.close()


@dataclass(frozen=True)
class Answer:
    """A server's whole response, read before the connection goes back to the pool."""

    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def completion(self, url: str) -> Generation:
        try:
            data = json.loads(self.body)
            choice = data["choices"][0]
            message = choice["message"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            snippet = self.text[:200].replace("\n", " ")
            raise RetryableError(f"{url}: malformed response ({type(exc).__name__}): {snippet!r}") from None
        usage = data.get("usage") or {}
        return Generation(
            text=message.get("content") or "",
            reasoning=message.get("reasoning_content") or message.get("reasoning") or None,
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
        )

    def retry_after(self) -> float | None:
        for header, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
            value = self.headers.get(header)
            if value:
                try:
                    return float(value) / scale
                except ValueError:
                    return None
        return None

    def error_text(self) -> str:
        try:
            error = json.loads(self.body).get("error", {})
            message = error.get("message") if isinstance(error, dict) else error
            if message:
                return str(message)
        except (ValueError, AttributeError):
            pass
        return self.text[:200] or self.reason
