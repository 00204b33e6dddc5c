"""One registry for every pluggable part: backends, domains, environments, metrics, explorers.

Parts register with a decorator (``@register("domain")`` takes the part's own ``name``;
``@register("backend", "openai")`` names it). A lookup of a kind imports lwm's own modules of that kind only
(a domain lookup does not import the bench scorer or the explorers). A third-party package adds its own parts
by declaring an entry point in the ``lwm.plugins`` group that points at a module; importing that module runs
its decorators. Entry points are loaded once, on the first lookup of any kind. A plugin that fails to import
is skipped with one line on stderr (every other command goes on); a plugin part under a name lwm or another
plugin already uses is refused, naming both (``PartClash``): a plugin cannot silently replace ``terminal``.

```toml
[project.entry-points."lwm.plugins"]
kanban = "lwm_kanban.domain"      # a module with @register("domain") class Kanban(Domain): ...
```
"""

from __future__ import annotations

import importlib
import sys
import threading
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
_plugins_loaded = False
_loading = threading.RLock()
_ready: set[str] = set()
"""Kinds whose modules and the plugins are imported (a look-up of these takes no lock)."""


class UnknownPartError(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; this is read by people
        return str(self.args[0])


class PartClash(ValueError):
    """Two parts of one kind under one name."""


def _where(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"


def is_builtin(obj: Any) -> bool:
    """Whether a part is lwm's own (defined in the ``lwm`` package), not a plugin's."""
    return getattr(obj, "__module__", "").split(".")[0] == "lwm"


def register(kind: Kind, name: str | None = None) -> Callable[[T], T]:
    """Register a part under ``name``, or under its own ``name`` attribute (a domain says its name once)."""
    def decorate(obj: T) -> T:
        key = name or getattr(obj, "name", None)
        if not isinstance(key, str) or not key:
            raise TypeError(f"register({kind!r}) needs a name: give one, or a part with a `name` attribute")
        known = _parts.setdefault(kind, {})
        before = known.get(key)
        if before is not None and _where(before) != _where(obj):  # the same part imported again is no clash
            if is_builtin(obj) and not is_builtin(before):  # a plugin loaded before lwm's own module of this kind
                _report(f"plugin part {_where(before)} dropped: {kind} {key!r} is lwm's own {_where(obj)}")
            else:
                raise PartClash(f"{kind} {key!r} is already {_where(before)}; {_where(obj)} cannot take its name")
        known[key] = obj
        return obj

    return decorate


def _report(line: str) -> None:
    print(f"lwm: {line}", file=sys.stderr)


def _load(kind: Kind) -> None:
    """Import lwm's modules of ``kind`` and the plugins, once. Under a lock: a server's sessions look parts up
    from many threads at once, and one must not see a kind as loaded while another is still importing it."""
    global _plugins_loaded
    if kind in _ready:
        return
    with _loading:
        if kind in _ready:
            return
        for module in BUILTIN[kind]:
            importlib.import_module(module)
        if not _plugins_loaded:
            _plugins_loaded = True
            for ep in entry_points(group="lwm.plugins"):
                try:
                    ep.load()
                except (Exception, SystemExit) as exc:  # noqa: BLE001 - one broken plugin must not break every command
                    _report(f"plugin {ep.name} ({ep.value}) skipped: {type(exc).__name__}: {exc}")
        _ready.add(kind)


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


def registered(kind: Kind, name: str) -> bool:
    """Whether ``name`` is registered as a ``kind`` so far, without importing lwm's own modules of that kind
    (a plugin's parts are there once plugins are loaded)."""
    return name in _parts.get(kind, {})


def names(kind: Kind) -> list[str]:
    _load(kind)
    return sorted(_parts.get(kind, {}))
