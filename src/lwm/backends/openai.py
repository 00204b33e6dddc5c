"""Any OpenAI-compatible chat server: vLLM, SGLang, llama-server, OpenAI itself.

Talks the wire format directly over httpx2 (pydantic's maintained httpx, whose connection pool is linear in
its connections where httpcore 1.0.9's is quadratic) so that every failure mode is ours to handle: a bounded
number of concurrent requests, a hard deadline per attempt (a trickling response cannot hang a run),
retries with exponential backoff and jitter on 429, 5xx, dropped connections, timeouts and malformed
bodies (honouring ``Retry-After``), and a clear error for everything that retrying cannot fix.

``base_url`` may name several servers of the same model (comma-separated: one vLLM server per GPU or per
node): each request goes to the one with the fewest requests in flight and the fewest recent failures,
keeping a session on one server while that is no worse (its prefix cache), and a retry tries the others
first. ``concurrency`` is per server.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from typing import Any

import httpx2 as httpx
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

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
        self._per_loop: dict[asyncio.AbstractEventLoop, list[tuple[httpx.AsyncClient, asyncio.Semaphore]]] = {}

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

    def _session(self) -> list[tuple[httpx.AsyncClient, asyncio.Semaphore]]:
        """A client and a limit per server and event loop: httpx clients cannot move between loops."""
        loop = asyncio.get_running_loop()
        if loop not in self._per_loop:
            self._per_loop[loop] = [(httpx.AsyncClient(
                base_url=url,
                headers={"Authorization": f"Bearer {self.api_key}"},
                timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
                limits=httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency),
            ), asyncio.Semaphore(self.concurrency)) for url in self.base_urls]
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

    def _wait(self, state: Any) -> float:
        exc = state.outcome.exception() if state.outcome else None
        hint = getattr(exc, "retry_after", None)
        base = wait_random_exponential(multiplier=self.backoff, max=self.max_backoff)(state)
        return min(max(base, hint or 0.0), self.max_backoff)

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
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(lambda e: isinstance(e, RetryableError)),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    i = self._pick(messages, tried)
                    tried.add(i)
                    client, limit = servers[i]
                    self.in_flight[i] += 1
                    try:
                        async with limit:
                            answer = await self._post(client, body, self.base_urls[i])
                    except RetryableError:
                        self.failures[i] += 1
                        self.resting_until[i] = time.monotonic() + min(2.0 ** self.failures[i], self.max_backoff)
                        raise
                    finally:
                        self.in_flight[i] -= 1
                    self.failures[i] = 0
                    return answer
        except RetryableError as exc:
            raise BackendError(f"{exc} (gave up after {self.max_retries + 1} attempts)") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    async def _post(self, client: httpx.AsyncClient, body: dict[str, Any], base_url: str) -> Generation:
        url = f"{base_url}/chat/completions"
        try:
            async with asyncio.timeout(self.timeout):
                response = await client.post("/chat/completions", json=body)
        except TimeoutError:
            raise RetryableError(f"{url}: no complete answer within {self.timeout:g}s") from None
        except httpx.TransportError as exc:
            raise RetryableError(f"{url}: connection failed: {type(exc).__name__}: {exc}") from None
        if response.status_code == 429 or response.status_code >= 500:
            raise RetryableError(f"{url}: HTTP {response.status_code}: {_error_text(response)}",
                                 _retry_after(response))
        if response.status_code >= 400:
            raise BackendError(f"{url}: HTTP {response.status_code}: {_error_text(response)}")
        return _parse_completion(url, response)

    def count_tokens(self, text: str) -> int:
        return approx_tokens(text)

    async def aclose(self) -> None:
        sessions, self._per_loop = self._per_loop, {}
        current = asyncio.get_running_loop()
        for loop, servers in sessions.items():
            if loop is current:
                for client, _ in servers:
                    await client.aclose()


def _parse_completion(url: str, response: httpx.Response) -> Generation:
    try:
        data = response.json()
        choice = data["choices"][0]
        message = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        snippet = response.text[:200].replace("\n", " ")
        raise RetryableError(f"{url}: malformed response ({type(exc).__name__}): {snippet!r}") from None
    usage = data.get("usage") or {}
    return Generation(
        text=message.get("content") or "",
        reasoning=message.get("reasoning_content") or message.get("reasoning") or None,
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
    )


def _retry_after(response: httpx.Response) -> float | None:
    for header, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = response.headers.get(header)
        if value:
            try:
                return float(value) / scale
            except ValueError:
                return None
    return None


def _error_text(response: httpx.Response) -> str:
    try:
        error = response.json().get("error", {})
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return str(message)
    except (ValueError, AttributeError):
        pass
    return response.text[:200] or response.reason_phrase

