"""Shared fixtures. Outbound network is blocked (pytest-socket, loopback allowed: see pyproject)."""

from __future__ import annotations

import pytest

from lwm.testing.openai_server import ScriptedServer


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own answer cache, so no test sees another's cached answers."""
    monkeypatch.setenv("LWM_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def server():
    with ScriptedServer() as srv:
        yield srv
