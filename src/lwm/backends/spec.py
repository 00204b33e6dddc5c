"""Model spec strings, the one way every lwm command names a model.

``provider[:model][?key=value&...]``: ``embedded``, ``embedded:/models/x.gguf?lora=/a.gguf&n_ctx=8192``,
``openai:Qwen/Qwen-AgentWorld-35B-A3B``, ``transformers:./checkpoint``, ``mock``. Query options are
passed to the backend's constructor (numbers and booleans are converted).
"""

from __future__ import annotations

import inspect
from typing import Any
from urllib.parse import parse_qsl

from lwm.backends.base import Backend
from lwm.registry import get

DEFAULT_SPEC = "embedded:lwm-mini"
"""The best world model lwm ships (SmolLM2-135M trained by lwm, in-process, offline); ``embedded:smollm2`` (or
plain ``embedded``) is its untrained base."""


def _value(text: str) -> Any:
    lowered = text.lower()
    if lowered in {"true", "false"}:
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_spec(spec: str) -> tuple[str, str | None, dict[str, Any]]:
    """``(provider, model or None, options)`` from a spec string."""
    head, _, query = spec.strip().partition("?")
    provider, _, model = head.partition(":")
    options = {k: _value(v) for k, v in parse_qsl(query, keep_blank_values=True)}
    return provider.strip().lower(), (model.strip() or None), options


def load_backend(spec: str | None = None, **options: Any) -> Backend:
    """A backend from a spec; keyword options (e.g. ``base_url``, ``concurrency``) apply where the backend
    takes them and are ignored where it does not; options in the spec itself must be known to it."""
    provider, model, spec_options = parse_spec(spec or DEFAULT_SPEC)
    cls = get("backend", provider)
    accepted = inspect.signature(cls.__init__).parameters
    spec_options = _checked(cls, provider, spec, spec_options)
    merged = {k: v for k, v in options.items() if v is not None and k in accepted} | spec_options
    try:
        return cls.from_spec(model, **merged)
    except TypeError as exc:
        raise ValueError(f"bad options for backend {provider!r} in {spec!r}: {exc}") from None


def _checked(cls: type[Backend], provider: str, spec: str | None, given: dict[str, Any]) -> dict[str, Any]:
    """The spec's options, each known to the backend's constructor and of the type it declares: a typo or
    ``n_threads=abc`` is a one-line ValueError, not a TypeError from deep inside or a silently ignored option."""
    import typing

    from pydantic import TypeAdapter, ValidationError

    parameters = {name: p for name, p in inspect.signature(cls.__init__).parameters.items()
                  if name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # noqa: BLE001 - an annotation that cannot be resolved is not checked
        hints = {}
    checked = {}
    for key, value in given.items():
        if key not in parameters or key in ("model", "script"):
            known = ", ".join(sorted(k for k in parameters if k not in ("model", "script"))) or "none"
            raise ValueError(f"bad options for backend {provider!r} in {spec!r}: unknown option {key!r}; it takes: "
                             f"{known}")
        try:
            checked[key] = TypeAdapter(hints[key]).validate_python(value) if key in hints else value
        except ValidationError as exc:
            wanted = getattr(hints[key], "__name__", str(hints[key]))
            raise ValueError(f"bad options for backend {provider!r} in {spec!r}: {key}={value!r} should be {wanted} "
                             f"({exc.errors()[0]['msg']})") from None
    return checked
