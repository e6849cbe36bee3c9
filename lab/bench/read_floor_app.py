"""The floor server of ``chatlog bench read-floor``: the least a user's month over HTTP costs in Python.

A bare ASGI callable (no framework, no routing, no validation, no rendering) under uvicorn with ``chatlog
serve``'s server stack (uvicorn's defaults: uvloop and httptools where installed, as ``chatlog serve`` runs),
on as many worker processes. For ``/channelid/<id>/userid/<id>/<year>/<month>`` it answers, by
``CHATLOG_FLOOR_MODE``:

* ``read``: one query of the raw driver, the blocks of part 0 of that user's month (the partition that holds
  a month of Twitch lines), their frames returned as they are stored: one Cassandra round trip and the bytes,
  none of the work of turning frames into lines;
* ``http``: ``CHATLOG_FLOOR_BODY_BYTES`` bytes held in memory, no read at all.

Anything else answers 404; ``/health`` answers 200 once the worker's session is up.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Final

QUERY: Final = (
    "SELECT frame FROM {keyspace}.user_blocks "
    "WHERE channel_key = ? AND user_key = ? AND month = ? AND part = 0"
)
"""The floor's one read: the blocks of part 0 of a user's month (``month``: year * 100 + month)."""
_HEADERS: Final = [(b"content-type", b"text/plain; charset=utf-8")]


def user_month_params(path: str) -> tuple[str, str, int]:
    """:data:`QUERY`'s values for ``/channelid/<id>/userid/<id>/<year>/<month>``; ValueError for any other
    path."""
    parts = path.split("/")
    if len(parts) != 7 or parts[1] != "channelid" or parts[3] != "userid":
        raise ValueError(f"not a user-month path by ids: {path}")
    return parts[2], parts[4], int(parts[5]) * 100 + int(parts[6])


async def read_frames(session: Any, query: Any, params: tuple[str, str, int]) -> list[bytes]:
    """:data:`QUERY` by the raw driver, its first page's frames (a current month's blocks fit one), the
    driver's callback handing them to the asyncio loop."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()
    future = session.execute_async(query, params)
    future.add_callbacks(
        lambda rows: loop.call_soon_threadsafe(done.set_result, rows),
        lambda exc: loop.call_soon_threadsafe(done.set_exception, exc),
    )
    return [row[0] for row in await done]


class _Floor:
    """One worker's state: the mode, the constant body, the session and the prepared query."""

    def __init__(self) -> None:
        self.mode = os.environ.get("CHATLOG_FLOOR_MODE", "read")
        self.body = b"x" * int(os.environ.get("CHATLOG_FLOOR_BODY_BYTES", "0"))
        self.cluster: Any = None
        self.session: Any = None
        self.query: Any = None

    def start(self) -> None:
        if self.mode != "read":
            return
        from core.cql import connect
        from core.settings import load
        from sink.settings import SinkSettings

        settings = load(SinkSettings)
        self.cluster, self.session = connect(settings)
        self.query = self.session.prepare(QUERY.format(keyspace=settings.cassandra_keyspace))

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.shutdown()


_floor = _Floor()


async def _send(send: Any, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": _HEADERS})
    await send({"type": "http.response.body", "body": body})


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The ASGI callable."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                _floor.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                _floor.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return
    path = scope["path"]
    if path == "/health":
        await _send(send, 200, b"ok")
        return
    try:
        params = user_month_params(path)
    except ValueError:
        await _send(send, 404, b"")
        return
    if _floor.mode == "read":
        await _send(send, 200, b"".join(await read_frames(_floor.session, _floor.query, params)))
    else:
        await _send(send, 200, _floor.body)
