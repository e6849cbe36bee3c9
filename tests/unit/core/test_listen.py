"""``core.listen``: an address a server cannot listen on is one line naming its settings."""

from __future__ import annotations

import socket

import pytest

from core.errors import ChatlogError
from core.listen import check_listen, listen_problem


def test_a_free_port_can_be_listened_on() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        free = taken.getsockname()[1]
    assert listen_problem("127.0.0.1", free, "S") is None


def test_a_taken_port_a_foreign_address_and_a_bad_host_are_one_line_each() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = listen_problem("127.0.0.1", port, "--port")
    assert busy == f"cannot listen on 127.0.0.1:{port} (--port): Address already in use"
    foreign = listen_problem("192.0.2.1", 8025, "--host")  # TEST-NET-1: no address of this machine
    assert foreign == "cannot listen on 192.0.2.1:8025 (--host): Cannot assign requested address"
    with pytest.raises(
        ChatlogError, match=r"^cannot listen on 999\.9\.9\.9:8025 \(H\): the host is not an address"
    ):
        check_listen("999.9.9.9", 8025, "H")
