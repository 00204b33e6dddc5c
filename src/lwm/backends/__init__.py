"""Ways to reach a model, behind the ``Backend`` protocol; importing this package registers them."""

from lwm.backends import baselines, embedded, mock, openai, transformers  # noqa: F401  (registers)
from lwm.backends.base import Backend, BackendError, BackendInfo, GenerateConfig, Generation, Message
from lwm.backends.mock import MockBackend
from lwm.backends.spec import DEFAULT_SPEC, load_backend, parse_spec
from lwm.registry import get, names


def backend_infos(options: dict[str, dict] | None = None) -> list[BackendInfo]:
    """Every registered backend's info; ``options`` by backend name (e.g. the openai server to probe)."""
    return [get("backend", name).info(**(options or {}).get(name, {})) for name in names("backend")]


__all__ = [
    "DEFAULT_SPEC", "Backend", "BackendError", "BackendInfo", "GenerateConfig", "Generation", "Message",
    "MockBackend", "backend_infos", "load_backend", "parse_spec",
]
