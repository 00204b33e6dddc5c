"""Tests may talk to loopback only; anything else must fail fast (pytest-socket, configured in pyproject)."""

import socket

import pytest
from pytest_socket import SocketConnectBlockedError


@pytest.mark.filterwarnings("ignore:A test tried to use socket")
def test_outbound_connections_are_blocked():
    with pytest.raises(SocketConnectBlockedError):
        socket.create_connection(("203.0.113.1", 80), timeout=1)


def test_loopback_is_allowed(server):
    socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
