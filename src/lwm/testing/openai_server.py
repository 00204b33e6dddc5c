"""A real OpenAI-compatible HTTP server on 127.0.0.1 with scripted answers and injectable faults.

For lwm's own tests and benchmarks (and for users testing their setup without a GPU): it speaks
``POST /v1/chat/completions`` (streamed when asked) and ``GET /v1/models``. Faults are queued and each one is
used by the next request(s): ``latency`` (answer after a delay), ``status`` (e.g. 500 or 429 with Retry-After),
``drop`` (headers sent, then the connection is cut mid-body), ``malformed`` (a 200 whose body is not a
completion), ``slow_stream`` (a body trickled out over ``seconds``), ``hang`` (no answer for ``seconds``).
A base ``latency`` applies to every request. Needs the ``testserver`` extra (starlette, uvicorn).
Out of process, ``POST /_control/faults`` queues faults
and ``GET /_control/stats`` reports what was received.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from lwm.testing.asgi import ThreadedServer

FaultKind = Literal["latency", "status", "drop", "malformed", "slow_stream", "hang"]
Answer = Sequence[str] | Callable[[list[dict[str, Any]]], str] | None


class Fault(BaseModel):
    kind: FaultKind
    seconds: float = 0.0
    status: int = 500
    retry_after: float | None = None
    times: int = 1


FAULTS = TypeAdapter(list[Fault])


def default_answer(messages: list[dict[str, Any]]) -> str:
    """A deterministic tagged answer that depends on the conversation, with a short think block."""
    last = messages[-1]["content"] if messages else ""
    digest = hashlib.sha256(json.dumps(messages).encode()).hexdigest()[:8]
    return (f"<think>The action was {len(last)} characters long.</think>\n"
            f"<predicted_observation>scripted observation {digest}</predicted_observation>")


class ScriptedServer:
    def __init__(self, answers: Answer = None, *, latency: float = 0.0, reasoning_field: bool = False,
                 model: str = "scripted", host: str = "127.0.0.1", port: int = 0):
        self.answers = answers
        self._cycle = itertools.cycle(answers) if isinstance(answers, Sequence) and answers else None
        self.latency = latency
        self.reasoning_field = reasoning_field
        self.model = model
        self.faults: deque[Fault] = deque()
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.host, self.port = host, port
        self._runner: ThreadedServer | None = None
        self.app = self._make_app()

    # --- faults ------------------------------------------------------------------------------
    def inject(self, kind: FaultKind, *, times: int = 1, **params: Any) -> None:
        self.faults.append(Fault(kind=kind, times=times, **params))

    def _next_fault(self) -> Fault | None:
        if not self.faults:
            return None
        fault = self.faults[0]
        fault.times -= 1
        if fault.times <= 0:
            self.faults.popleft()
        return fault

    def _answer(self, messages: list[dict[str, Any]]) -> str:
        if self._cycle is not None:
            return next(self._cycle)
        return self.answers(messages) if callable(self.answers) else default_answer(messages)

    def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
        text = self._answer(body.get("messages", []))
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if self.reasoning_field and "</think>" in text:
            thought, _, rest = text.partition("</think>")
            message = {"role": "assistant", "content": rest.strip(),
                       "reasoning_content": thought.replace("<think>", "").strip()}
        prompt_chars = sum(len(m.get("content", "")) for m in body.get("messages", []))
        return {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": len(text) // 4,
                      "total_tokens": (prompt_chars + len(text)) // 4},
        }

    # --- the app -----------------------------------------------------------------------------
    def _make_app(self) -> Any:
        """A plain Starlette app: FastAPI's layers add CPU to every request (a few tenths of a ms here, noisy),
        which a benchmark running client and server on two cores would count against the client."""
        async def models(request: Request) -> Response:
            return JSONResponse({"object": "list", "data": [{"id": self.model, "object": "model",
                                                             "max_model_len": 32768}]})

        async def chat(request: Request) -> Response:
            body = await request.json()
            self.requests.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                return await respond(body, self._next_fault())
            finally:
                self.in_flight -= 1

        async def respond(body: dict[str, Any], fault: Fault | None) -> Response:
            delay = self.latency + (fault.seconds if fault and fault.kind in ("latency", "hang") else 0.0)
            if delay:
                await asyncio.sleep(delay)
            if fault and fault.kind == "status":
                headers = {"retry-after": str(fault.retry_after)} if fault.retry_after is not None else {}
                return JSONResponse({"error": {"message": f"injected HTTP {fault.status}", "type": "injected"}},
                                    status_code=fault.status, headers=headers)
            if fault and fault.kind == "malformed":
                return Response('{"choices": [ this is not json', media_type="application/json")
            completion = self._completion(body)
            if body.get("stream") and not fault:
                usage = bool((body.get("stream_options") or {}).get("include_usage"))
                return StreamingResponse(_events(completion, usage), media_type="text/event-stream")
            payload = json.dumps(completion).encode()
            if fault and fault.kind == "drop":
                return StreamingResponse(_dropped(payload), media_type="application/json")
            if fault and fault.kind == "slow_stream":
                return StreamingResponse(_trickled(payload, fault.seconds), media_type="application/json")
            return Response(payload, media_type="application/json")

        async def add_faults(request: Request) -> Response:
            try:
                faults = FAULTS.validate_json(await request.body())
            except ValidationError as exc:
                return JSONResponse({"detail": exc.errors(include_url=False)}, status_code=422)
            self.faults.extend(faults)
            return JSONResponse({"queued": len(self.faults)})

        async def stats(request: Request) -> Response:
            return JSONResponse({"requests": len(self.requests), "queued_faults": len(self.faults)})

        return Starlette(routes=[Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"]),
                                 Route("/_control/faults", add_faults, methods=["POST"]),
                                 Route("/_control/stats", stats)])

    # --- running -----------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> ScriptedServer:
        self._runner = ThreadedServer(self.app, self.host, self.port).start()
        self.port = self._runner.port
        return self

    def wait(self) -> None:
        """Block until the server stops or Ctrl+C (for ``lwm testserver``)."""
        assert self._runner is not None, "start() first"
        self._runner.wait()

    def stop(self) -> None:
        if self._runner is not None:
            self._runner.stop()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def _dropped(payload: bytes) -> AsyncIterator[bytes]:
    yield payload[: len(payload) // 3]
    await asyncio.sleep(0.01)
    raise ConnectionResetError("injected drop")


async def _events(completion: dict[str, Any], usage: bool) -> AsyncIterator[bytes]:
    """A completion as OpenAI's stream sends it (``stream: true``): the message as one delta, then the finish
    reason, the usage if asked (``stream_options.include_usage``), and ``[DONE]``."""
    head = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    choice = completion["choices"][0]
    chunks = [{**head, "choices": [{"index": 0, "delta": choice["message"], "finish_reason": None}]},
              {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]}]
    if usage:
        chunks.append({**head, "choices": [], "usage": completion["usage"]})
    for chunk in chunks:
        yield f"data: {json.dumps(chunk)}\n\n".encode()
    yield b"data: [DONE]\n\n"


async def _trickled(payload: bytes, seconds: float) -> AsyncIterator[bytes]:
    pieces = 10
    step = max(1, len(payload) // pieces)
    for i in range(0, len(payload), step):
        yield payload[i : i + step]
        await asyncio.sleep(seconds / pieces)
