"""``chatlog serve``'s app on uvicorn, over events written into a fresh keyspace by :mod:`store.write`."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from core.settings import StackSettings
from lab.bench.scratch import drop_keyspaces
from schemas.chat_event import ChatEvent
from serve.api.app import create_app
from serve.settings import ServeSettings
from store.schema import apply_schema
from tests.integration.serve.events import write
from tests.uvicorn_thread import served


class Server:
    def __init__(self, base: str, events: list[ChatEvent]) -> None:
        self.base = base
        self.events = events

    def get(self, path: str, **kw: object) -> httpx.Response:
        return httpx.get(self.base + path, follow_redirects=False, timeout=60, **kw)  # type: ignore[arg-type]


@contextmanager
def serving(
    stack: StackSettings, tmp_path_factory: pytest.TempPathFactory, events: list[ChatEvent]
) -> Iterator[Server]:
    """uvicorn on a free port serving ``events``, written into a fresh keyspace by
    :func:`tests.integration.serve.events.write` (``tmp_path_factory``: unused, kept for the callers)."""
    del tmp_path_factory
    keyspace = f"t{uuid.uuid4().hex[:10]}"
    settings = stack.model_copy(update={"cassandra_keyspace": keyspace})
    serve_values: dict[str, Any] = {"cassandra_keyspace": keyspace, "serve_channels_ttl_s": 0}
    try:
        apply_schema(settings)
        write(settings, events)
        with served(create_app(ServeSettings(**serve_values))) as base:
            yield Server(base, events)
    finally:
        drop_keyspaces(settings, [keyspace])
