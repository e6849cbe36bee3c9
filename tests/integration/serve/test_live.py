"""``GET /api/live/{channel}`` over a real socket on the real Kafka: events produced to a fresh messages
topic, two copies of each as the two replica groups write them, reach an SSE client once each, in order;
``?user=`` keeps one user's; a bad or unlogged channel is a 400. The latency from produce() to the
client's read is printed (run with ``-s``), not asserted."""

from __future__ import annotations

import json
import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer
from fastapi import FastAPI

from core.settings import CassandraSettings, KafkaSettings, StackSettings
from schemas.chat_event import ChatEvent, encode
from serve.api.app import open_store
from serve.api.live import live_router
from serve.live import LiveHub, live_message
from serve.settings import LiveSettings, ServeSettings
from sink.settings import SinkSettings
from tests.integration.serve.events import line_event, write
from tests.uvicorn_thread import served

pytestmark = pytest.mark.integration

EVENTS = 30
COPY_SKEW_S = 1.2
"""The second copy of an event is produced this long after the first (the replica groups' skew)."""
GAP_S = 0.1


@dataclass
class Received:
    status: int = 0
    events: list[tuple[float, str | None, str | None, str]] = field(default_factory=list)
    """(monotonic time read, id, event name, data) per event."""
    comments: int = 0
    opened: threading.Event = field(default_factory=threading.Event)


class Reader(threading.Thread):
    """An SSE client (httpx, streaming) collecting the events of one URL until told to stop."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.got = Received()
        self.stop = threading.Event()

    def run(self) -> None:
        fields: dict[str, str] = {}
        with httpx.stream("GET", self.url, timeout=httpx.Timeout(30, read=60)) as response:
            self.got.status = response.status_code
            self.got.opened.set()
            for line in response.iter_lines():
                if self.stop.is_set():
                    return
                if line.startswith(":"):
                    self.got.comments += 1
                elif line:
                    name, _, value = line.partition(":")
                    fields[name] = value[1:] if value.startswith(" ") else value
                elif fields:
                    read_at = time.monotonic()
                    self.got.events.append((read_at, fields.get("id"), fields.get("event"), fields["data"]))
                    fields = {}

    def ids(self) -> list[str | None]:
        return [e[1] for e in self.got.events]


@dataclass
class Live:
    base: str
    channel: str
    settings: LiveSettings
    app: FastAPI


@pytest.fixture
def live(sink_settings: SinkSettings, fresh_keyspace: StackSettings, unique: str) -> Iterator[Live]:
    """uvicorn on a free port with the live router, on the fresh topics; the app's store is the fresh
    keyspace, where one past line of the channel makes it a logged one."""
    channel = f"live{unique}"
    write(
        sink_settings,
        [
            line_event(
                "PRIVMSG", channel, 1_700_000_000_000, login="bob", text="past", message_id=str(uuid.uuid4())
            )
        ],
    )
    kafka: dict[str, Any] = {name: getattr(sink_settings, name) for name in KafkaSettings.model_fields}
    settings = LiveSettings(**kafka, serve_live_ping_s=0.5)
    cassandra: dict[str, Any] = {n: getattr(fresh_keyspace, n) for n in CassandraSettings.model_fields}
    cluster, store = open_store(ServeSettings(**cassandra))
    app = FastAPI()
    app.state.store = store
    app.include_router(live_router(settings))
    try:
        with served(app) as base:
            yield Live(base, channel, settings, app)
    finally:
        cluster.shutdown()
    hub = app.state.live_hub
    assert isinstance(hub, LiveHub) and not hub.running, "the live consumer outlived the app"


def _events(channel: str, n: int) -> list[ChatEvent]:
    now = int(time.time() * 1000)
    users = ("bob", "carol", "dave")
    return [
        line_event(
            "PRIVMSG",
            channel,
            now + i,
            login=users[i % 3],
            text=f"live line {i}",
            message_id=str(uuid.uuid4()),
            room_id="7001",
        )
        for i in range(n)
    ]


def _open(url: str) -> Reader:
    reader = Reader(url)
    reader.start()
    assert reader.got.opened.wait(30), f"{url} did not answer"
    assert reader.got.status == 200
    return reader


def test_each_event_reaches_a_subscriber_once_and_the_user_filter_keeps_one_users(live: Live) -> None:
    everyone = _open(f"{live.base}/api/live/{live.channel}")
    bobs = _open(f"{live.base}/api/live/%23{live.channel.upper()}?user=Bob")  # '#' and case dropped
    events = _events(live.channel, EVENTS)
    others = _events(f"x{live.channel}", 5)  # another channel on the same topic: nobody follows it
    producer = Producer({**live.settings.kafka_client_config(), "linger.ms": 0})
    topic = live.settings.topic_messages
    sent_at: dict[str, float] = {}

    def produce(event: ChatEvent) -> None:
        producer.produce(topic, encode(event), event.channel.encode())
        producer.poll(0)

    try:
        schedule = sorted(
            [(i * GAP_S, e, True) for i, e in enumerate(events)]
            + [(i * GAP_S + COPY_SKEW_S, e, False) for i, e in enumerate(events)]
            + [(i * GAP_S, e, False) for i, e in enumerate(others)],
            key=lambda s: s[0],
        )
        start = time.monotonic()
        for at, event, first in schedule:
            time.sleep(max(0.0, start + at - time.monotonic()))
            if first:
                sent_at[event.message_id] = time.monotonic()
            produce(event)
        assert producer.flush(30) == 0
        deadline = time.monotonic() + 30
        while len(everyone.got.events) < EVENTS and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(2.0)  # the last second copies, and anything else that would come
    finally:
        everyone.stop.set()
        bobs.stop.set()

    expected = [e.message_id for e in events]
    assert everyone.ids() == expected  # each once, in order, and nothing of the other channel
    assert [json.loads(e[3]) for e in everyone.got.events] == [live_message(e) for e in events]
    assert all(e[2] is None for e in everyone.got.events)  # plain message events
    assert bobs.ids() == [e.message_id for e in events if e.user_login == "bob"]
    assert everyone.got.comments >= 2  # keep-alive comments (every 0.5 s here)

    latencies = sorted((read_at - sent_at[str(mid)]) * 1000 for read_at, mid, _e, _d in everyone.got.events)
    print(
        f"\nlive latency, produce() -> SSE client read, {len(latencies)} events: "
        f"p50 {statistics.median(latencies):.1f} ms, max {latencies[-1]:.1f} ms, "
        f"min {latencies[0]:.1f} ms"
    )
    hub = live.app.state.live_hub
    assert isinstance(hub, LiveHub) and hub.duplicates >= EVENTS


def test_a_bad_or_unlogged_channel_is_a_400(live: Live) -> None:
    for path, message in [
        ("/api/live/two%20words", "invalid channel name: 'two words'"),
        (f"/api/live/{live.channel}?user=a%2Cb", "invalid user name: 'a,b'"),
        ("/api/live/nosuchchannel", "channel 'nosuchchannel' is not logged"),
    ]:
        response = httpx.get(live.base + path, timeout=30)
        assert response.status_code == 400, path
        assert response.json() == {"status": 400, "message": message}
    hub = live.app.state.live_hub
    assert isinstance(hub, LiveHub) and not hub.running  # a refused subscriber starts no consumer
