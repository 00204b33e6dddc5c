"""One registry for every pluggable part: backends, domains, environments, metrics, explorers.

Parts register with a decorator (``@register("domain")`` takes the part's own ``name``;
``@register("backend", "openai")`` names it). A lookup of a kind imports lwm's own modules of that kind only
(a domain lookup does not import the bench scorer or the explorers). A third-party package adds its own parts
by declaring an entry point in the ``lwm.plugins`` group that points at a module; importing that module runs
its decorators. Entry points are loaded once, on the first lookup of any kind.

```toml
[project.entry-points."lwm.plugins"]
kanban = "lwm_kanban.domain"      # a module with @register("domain") class Kanban(Domain): ...
```
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

if TYPE_CHECKING:
    from lwm.backends.base import Backend
    from lwm.bench.scorer import Scorer
    from lwm.collect.explorers.base import Explorer
    from lwm.domains.base import Domain
    from lwm.envs.base import TextEnv

Kind = Literal["backend", "domain", "env", "metric", "explorer"]
T = TypeVar("T")

BUILTIN: dict[str, tuple[str, ...]] = {
    "backend": ("lwm.backends",), "domain": ("lwm.domains",), "env": ("lwm.envs", "lwm.envs.real"),
    "metric": ("lwm.bench.scorer",), "explorer": ("lwm.collect.explorers",)}
"""The modules whose import registers lwm's own parts of each kind."""
_parts: dict[str, dict[str, Any]] = {}
_loaded: set[str] = set()
_plugins_loaded = False


class UnknownPartError(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; this is read by people
        return str(self.args[0])


def register(kind: Kind, name: str | None = None) -> Callable[[T], T]:
    """Register a part under ``name``, or under its own ``name`` attribute (a domain says its name once)."""
    def decorate(obj: T) -> T:
        key = name or getattr(obj, "name", None)
        if not isinstance(key, str) or not key:
            raise TypeError(f"register({kind!r}) needs a name: give one, or a part with a `name` attribute")
        _parts.setdefault(kind, {})[key] = obj
        return obj

    return decorate


def _load(kind: Kind) -> None:
    global _plugins_loaded
    if kind not in _loaded:
        _loaded.add(kind)
        for module in BUILTIN[kind]:
            importlib.import_module(module)
    if not _plugins_loaded:
        _plugins_loaded = True
        for ep in entry_points(group="lwm.plugins"):
            ep.load()


@overload
def get(kind: Literal["domain"], name: str) -> type[Domain]: ...
@overload
def get(kind: Literal["backend"], name: str) -> type[Backend]: ...
@overload
def get(kind: Literal["env"], name: str) -> Callable[..., TextEnv]: ...
@overload
def get(kind: Literal["metric"], name: str) -> Callable[..., Scorer]: ...
@overload
def get(kind: Literal["explorer"], name: str) -> Callable[..., Explorer]: ...
def get(kind: Kind, name: str) -> Any:
    """The part of ``kind`` registered as ``name``; ``UnknownPartError`` lists the known ones."""
    _load(kind)
    try:
        return _parts[kind][name]
    except KeyError:
        known = ", ".join(sorted(_parts.get(kind, {}))) or "none"
        raise UnknownPartError(f"unknown {kind} {name!r}; known: {known}") from None


def names(kind: Kind) -> list[str]:
    _load(kind)
    return sorted(_parts.get(kind, {}))
