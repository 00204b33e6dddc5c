"""One registry for every pluggable part: backends, domains, environments, metrics, explorers.

Parts register with a decorator (``@register("domain", "terminal")``). A third-party package adds
its own by declaring an entry point in the ``lwm.plugins`` group that points at a module; importing
that module runs its decorators. Entry points are loaded once, on the first lookup.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, Literal, TypeVar

Kind = Literal["backend", "domain", "env", "metric", "explorer"]
T = TypeVar("T")

_BUILTIN_MODULES = ("lwm.domains", "lwm.backends", "lwm.envs", "lwm.envs.real", "lwm.collect.explorers",
                    "lwm.bench.scorer")
_parts: dict[str, dict[str, Any]] = {}
_loaded = False


class UnknownPartError(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; this is read by people
        return str(self.args[0])


def register(kind: Kind, name: str) -> Callable[[T], T]:
    def decorate(obj: T) -> T:
        _parts.setdefault(kind, {})[name] = obj
        return obj

    return decorate


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in _BUILTIN_MODULES:
        importlib.import_module(module)
    for ep in entry_points(group="lwm.plugins"):
        ep.load()


def get(kind: Kind, name: str) -> Any:
    _load()
    try:
        return _parts[kind][name]
    except KeyError:
        known = ", ".join(sorted(_parts.get(kind, {}))) or "none"
        raise UnknownPartError(f"unknown {kind} {name!r}; known: {known}") from None


def names(kind: Kind) -> list[str]:
    _load()
    return sorted(_parts.get(kind, {}))
