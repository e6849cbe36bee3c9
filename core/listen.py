"""Whether a server can listen on an address: one line naming the settings when it cannot (a host that is
not an address of this machine, a port in use or below 1024), before a server library says it in several."""

from __future__ import annotations

import socket

from core.errors import ChatlogError


def listen_problem(host: str, port: int, settings: str) -> str | None:
    """Why ``host:port`` cannot be listened on, in one line naming ``settings``; None when it can."""
    where = f"{host}:{port} ({settings})"
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        return (
            f"cannot listen on {where}: the host is not an address: {getattr(exc, 'strerror', None) or exc}"
        )
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind
        try:
            probe.bind(address)
        except OSError as exc:
            return f"cannot listen on {where}: {exc.strerror or exc}"
    return None


def check_listen(host: str, port: int, settings: str) -> None:
    """:func:`listen_problem` as a :class:`ChatlogError`."""
    problem = listen_problem(host, port, settings)
    if problem is not None:
        raise ChatlogError(problem)
