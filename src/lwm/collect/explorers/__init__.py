"""Explorer policies, one module per domain; importing this package registers them."""

from lwm.collect.explorers import mcp, os, programs, search, swe, terminal, web  # noqa: F401  (registers)
from lwm.collect.explorers.base import BaseExplorer, Explorer

__all__ = ["BaseExplorer", "Explorer"]
