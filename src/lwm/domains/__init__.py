"""The seven domains; importing this package registers them."""

from lwm.domains import android, mcp, os, search, swe, terminal, web  # noqa: F401  (registers)
from lwm.domains.base import ActionError, Domain
from lwm.registry import get, names


def get_domain(name: str) -> Domain:
    """The domain registered under ``name`` (a fresh instance)."""
    return get("domain", name)()


def domain_names() -> list[str]:
    return names("domain")


__all__ = ["ActionError", "Domain", "domain_names", "get_domain"]
