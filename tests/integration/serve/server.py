"""``chatlog serve``'s app on uvicorn, over events the sink's writer stored in a fresh keyspace."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sink.writer.cassandra import close_sessions

from core.cql import apply_schema, connect
from core.settings import StackSettings
from schemas.chat_event import ChatEvent, encode
from serve.api.app import create_app
from serve.settings import ServeSettings
from sink.settings import SinkSettings
from sink.writer.partition import write_partition
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
    """uvicorn on a free port serving ``events``, written by the sink's writer into a fresh keyspace."""
    keyspace = f"t{uuid.uuid4().hex[:10]}"
    settings = stack.model_copy(update={"cassandra_keyspace": keyspace})
    apply_schema(settings)
    sink_values: dict[str, Any] = {"cassandra_keyspace": keyspace, "sink_metrics_port": 0}
    sink = SinkSettings(**sink_values, sink_checkpoint=str(tmp_path_factory.mktemp("cp")))
    stats = write_partition(((encode(e), None, None) for e in events), sink)
    close_sessions()
    assert stats.events == len(events)
    serve_values: dict[str, Any] = {"cassandra_keyspace": keyspace, "serve_channels_ttl_s": 0}
    try:
        with served(create_app(ServeSettings(**serve_values))) as base:
            yield Server(base, events)
    finally:
        cluster, session = connect(settings)
        try:
            session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=60)
        finally:
            cluster.shutdown()
