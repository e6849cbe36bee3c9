"""An ASGI app served by uvicorn on a free loopback port, in a thread of the test process: the real HTTP
server (a real socket) the serve tests talk to."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def served(
    app: Any, *, log_level: str = "warning", start_s: float = 30.0, stop_s: float = 60.0
) -> Iterator[str]:
    """``app`` under uvicorn (its lifespan run) until the block ends; yields its base URL. Fails when it
    does not start within ``start_s`` or does not stop within ``stop_s``."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level=log_level, lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_s
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(stop_s)
        assert not thread.is_alive(), "uvicorn did not stop"
