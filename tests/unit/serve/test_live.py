"""The live side's logic with doubles: deduplication, fan-out, the slow client, the consumer thread's
selection, a start that fails, and the route's 400s and 503s (no Kafka, no sockets but a refused one)."""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from collections.abc import Callable, Coroutine
from typing import Any

import httpx
import pytest
from confluent_kafka import OFFSET_END, TopicPartition
from fastapi import FastAPI

from core.kafka_probe import KafkaUnreachable
from core.testing import FakeMessage, chat_events, eventually, twitch_event
from schemas.chat_event import ChatEvent, encode
from serve.api.live import live_router, login
from serve.formats import full_message, page_fields
from serve.live import (
    Fanout,
    LiveEvent,
    LiveHub,
    LiveUnavailable,
    RecentIds,
    event_users,
    live_message,
    to_live,
)
from serve.settings import LiveSettings
from serve.testing import MemoryStore

TOPIC = "t.messages"


def sync(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """The async test run on a new event loop (the project runs no asyncio plugin)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


def _settings(**kw: Any) -> LiveSettings:
    values: dict[str, Any] = {"topic_messages": TOPIC, **kw}
    return LiveSettings(**values)


def _event(channel: str = "chan0", user: str = "bob", message_id: str = "m1", **kw: Any) -> LiveEvent:
    return LiveEvent(message_id, channel, frozenset({user}), json.dumps({"id": message_id, **kw}))


def _record(event: ChatEvent, partition: int = 0) -> FakeMessage:
    return FakeMessage(TOPIC, encode(event), event.channel.encode(), partition=partition)


# --- RecentIds ---------------------------------------------------------------------------------------


def test_recent_ids_say_first_once_per_id_within_the_window() -> None:
    recent = RecentIds(3)
    assert [recent.first(i) for i in ("a", "b", "a", "c", "b")] == [True, True, False, True, False]
    assert recent.first("d")  # the window is full: "a" leaves it
    assert len(recent) == 3
    assert recent.first("a")
    assert not recent.first("d")
    with pytest.raises(ValueError):
        RecentIds(0)


# --- the message ---------------------------------------------------------------------------------------


def test_the_live_message_is_the_json_formats_message_with_the_message_id() -> None:
    events = chat_events(200, channels=2)
    for event in events:
        message = live_message(event)
        assert message == {**full_message(event), "id": event.message_id, **page_fields(event)}
        live = to_live(event)
        assert json.loads(live.data) == message
        assert (live.message_id, live.channel) == (event.message_id, event.channel)
    kinds = {e.kind for e in events}
    assert {"PRIVMSG", "CLEARCHAT", "CLEARMSG"} <= kinds


def test_a_users_lines_are_theirs_and_the_moderation_of_them() -> None:
    events = chat_events(200, channels=1)
    privmsg = next(e for e in events if e.kind == "PRIVMSG")
    assert event_users(privmsg) == {privmsg.user_login}
    timeout = next(e for e in events if e.kind == "CLEARCHAT")
    assert event_users(timeout) == {"user5"}
    deleted = next(e for e in events if e.kind == "CLEARMSG")
    assert event_users(deleted) == {deleted.tags["login"]}


def test_login_accepts_channel_names_and_refuses_what_cannot_be_one() -> None:
    assert login("#Forsen") == "forsen"
    assert login(" d1a2b3_0 ") == "d1a2b3_0"
    assert login("été") == "été"
    for bad in ("", "#", "a b", "a,b", "a\x07b", "x" * 201):
        assert login(bad) is None, bad


# --- the fan-out ---------------------------------------------------------------------------------------


@sync
async def test_fanout_gives_each_channels_subscribers_its_events_and_filters_users() -> None:
    fanout = Fanout(queue_size=10, max_subscribers=10)
    alice = fanout.add("chan0")
    bobs = fanout.add("chan0", user="bob")
    other = fanout.add("chan1")
    assert fanout.channels == {"chan0", "chan1"}
    fanout.publish([_event(user="bob", message_id="1"), _event(user="carol", message_id="2")])
    fanout.publish([_event(channel="chan1", message_id="3")])
    assert [e.message_id for e in _drain(alice)] == ["1", "2"]
    assert [e.message_id for e in _drain(bobs)] == ["1"]
    assert [e.message_id for e in _drain(other)] == ["3"]
    fanout.remove(other)
    fanout.remove(other)  # twice: nothing happens
    assert fanout.channels == {"chan0"}
    fanout.publish([_event(channel="chan1", message_id="4")])
    assert _drain(other) == []


@sync
async def test_a_slow_subscriber_is_dropped_and_the_others_get_everything() -> None:
    fanout = Fanout(queue_size=3, max_subscribers=10)
    slow, fast = fanout.add("chan0"), fanout.add("chan0")
    got: list[str] = []

    async def read_fast() -> None:
        while (item := await fast.queue.get()) is not None:
            got.append(item.message_id)

    reader = asyncio.create_task(read_fast())
    for i in range(10):  # the fast reader keeps up (it runs between publishes); the slow one reads nothing
        fanout.publish([_event(message_id=str(i))])
        await asyncio.sleep(0)
    await eventually(lambda: len(got) == 10, 5, "the fast subscriber's events")
    assert got == [str(i) for i in range(10)]
    assert slow.dropped and slow.ended is not None and "fell 3 events behind" in slow.ended
    assert slow.queue.get_nowait() is None and slow.queue.empty()  # emptied: only its end is left
    assert fanout.dropped == 1 and len(fanout) == 1
    fanout.end_all("stopping")
    await asyncio.wait_for(reader, 5)
    assert (
        fast.ended == "stopping" and not fast.dropped and len(fanout) == 0 and fanout.channels == frozenset()
    )


@sync
async def test_fanout_refuses_subscribers_past_its_maximum() -> None:
    fanout = Fanout(queue_size=1, max_subscribers=2)
    first = fanout.add("a")
    fanout.add("b")
    with pytest.raises(LiveUnavailable, match=r"too many live subscribers .*MAX_SUBSCRIBERS"):
        fanout.add("c")
    fanout.remove(first)
    fanout.add("c")


def _drain(sub: Any) -> list[LiveEvent]:
    out = []
    while not sub.queue.empty():
        out.append(sub.queue.get_nowait())
    return out


# --- the consumer's thread, with doubles -------------------------------------------------------------------


class Metadata:
    def __init__(self, partitions: int) -> None:
        self.topics = {
            TOPIC: type("T", (), {"error": None, "partitions": dict.fromkeys(range(partitions))})()
        }


class Consumer:
    """A ``confluent_kafka.Consumer`` for the hub: assign() records; poll() waits for what the test fed and
    returns its first record, consume() the next ones."""

    def __init__(self, conf: dict[str, Any]) -> None:
        self.conf = conf
        self.assigned: list[TopicPartition] = []
        self.closed = False
        self._fed: list[FakeMessage] = []
        self._lock = threading.Condition()

    def feed(self, *records: FakeMessage) -> None:
        with self._lock:
            self._fed.extend(records)
            self._lock.notify_all()

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned = list(partitions)

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned.extend(partitions)

    def poll(self, timeout: float = -1) -> Any:
        got = self.consume(1, timeout)
        return got[0] if got else None

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        with self._lock:
            if not self._fed:
                self._lock.wait(timeout)
            out, self._fed = self._fed[:num_messages], self._fed[num_messages:]
            return out

    def offsets_for_times(
        self, partitions: list[TopicPartition], timeout: float = -1
    ) -> list[TopicPartition]:
        """ListOffsets at the end (the only offsets the live tail asks): partition p ends at 100 + p."""
        assert all(tp.offset == OFFSET_END for tp in partitions)
        return [TopicPartition(tp.topic, tp.partition, 100 + tp.partition) for tp in partitions]

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        return Metadata(2)

    def close(self) -> None:
        self.closed = True


@sync
async def test_the_hub_starts_at_the_end_of_every_partition_and_delivers_each_message_id_once() -> None:
    consumers: list[Consumer] = []

    def factory(conf: dict[str, Any]) -> Consumer:
        consumers.append(Consumer(conf))
        return consumers[-1]

    probes: list[float] = []

    def prober(_settings: LiveSettings, timeout: float) -> Metadata:
        probes.append(timeout)
        return Metadata(2)

    hub = LiveHub(_settings(), consumer_factory=factory, prober=prober)
    assert not hub.running
    sub = await hub.subscribe("chan0")
    assert hub.running and probes == [5.0] and len(consumers) == 1
    consumer = consumers[0]
    assert [(p.topic, p.partition, p.offset) for p in consumer.assigned] == [(TOPIC, 0, 100), (TOPIC, 1, 101)]
    conf = consumer.conf
    assert conf["enable.auto.commit"] is False and conf["group.id"].startswith("chatlog-serve-live-")
    bobs = await hub.subscribe("chan0", user="user1")
    assert len(consumers) == 1  # one consumer, however many subscribers

    events = [e for e in chat_events(60, channels=2) if e.kind == "PRIVMSG"]
    mine = [e for e in events if e.channel == "chan0"]
    consumer.feed(*(_record(e) for e in events))  # one copy of each, from one replica group
    consumer.feed(FakeMessage(TOPIC, b"not json", b"chan0"), FakeMessage(TOPIC, None, b"chan0"))
    consumer.feed(*(_record(e, partition=1) for e in events))  # the other group's copies, later
    await eventually(lambda: sub.delivered == len(mine), 5, "every chan0 event")
    await eventually(lambda: hub.duplicates == len(mine), 5, "the second copies to be dropped")
    got = _drain(sub)
    assert [e.message_id for e in got] == [e.message_id for e in mine]
    assert [e.message_id for e in _drain(bobs)] == [e.message_id for e in mine if e.user_login == "user1"]
    assert hub.stats()["published"] == len(mine)

    await hub.close()
    assert not hub.running and consumer.closed
    assert sub.ended == "the server is stopping" and sub.queue.get_nowait() is None
    with pytest.raises(LiveUnavailable, match="stopping"):
        await hub.subscribe("chan0")


@sync
async def test_a_hub_that_cannot_reach_kafka_says_why_and_asks_again_only_after_a_pause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[float] = []

    def prober(_settings: LiveSettings, timeout: float) -> Metadata:
        calls.append(timeout)
        raise KafkaUnreachable("Kafka at 127.0.0.1:1 is not reachable (CHATLOG_KAFKA_BOOTSTRAP_SERVERS)")

    def never(_conf: dict[str, Any]) -> Consumer:
        raise AssertionError("no consumer without Kafka")

    clock = [1000.0]
    monkeypatch.setattr("serve.live.time.monotonic", lambda: clock[0])
    hub = LiveHub(_settings(), consumer_factory=never, prober=prober)
    for _ in range(3):
        with pytest.raises(LiveUnavailable, match=r"^Kafka at 127\.0\.0\.1:1 is not reachable"):
            await hub.subscribe("chan0")
    assert len(calls) == 1
    clock[0] += 2.5
    with pytest.raises(LiveUnavailable):
        await hub.subscribe("chan0")
    assert len(calls) == 2 and len(hub.fanout) == 0


@sync
async def test_a_missing_topic_is_said_in_one_line() -> None:
    hub = LiveHub(_settings(), prober=lambda _s, _t: type("M", (), {"topics": {}})())
    with pytest.raises(
        LiveUnavailable, match=r"^the topic t\.messages does not exist \(CHATLOG_TOPIC_MESSAGES\)$"
    ):
        await hub.subscribe("chan0")


# --- the route ---------------------------------------------------------------------------------------


def Store() -> MemoryStore:  # noqa: N802 - reads as the store it makes
    """A store in which only #known is logged."""
    return MemoryStore([twitch_event("PRIVMSG", "known", sent_at=1_704_153_600_000, text="hi")])


def _get(settings: LiveSettings | None, path: str, store: object | None = None) -> httpx.Response:
    """One GET on an app with the live router (its lifespan run around it), as the ASGI app sees it."""

    async def go() -> httpx.Response:
        app = FastAPI()
        if store is not None:
            app.state.store = store
        app.include_router(live_router(settings))
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                return await client.get(path)

    return asyncio.run(go())


def test_bad_names_and_unlogged_channels_are_400_in_one_json_line() -> None:
    for path, message in [
        ("/api/live/a%20b", "invalid channel name: 'a b'"),
        ("/api/live/known?user=a,b", "invalid user name: 'a,b'"),
        ("/api/live/%23", "invalid channel name: '#'"),
        ("/api/live/nobody", "channel 'nobody' is not logged"),
    ]:
        response = _get(_settings(), path, Store())
        assert response.status_code == 400, path
        assert response.json() == {"status": 400, "message": message}
        assert "\n" not in response.text


def test_kafka_not_reachable_is_a_503_in_one_json_line() -> None:
    settings = _settings(kafka_bootstrap_servers="127.0.0.1:1", serve_live_connect_timeout_s=3)
    response = _get(settings, "/api/live/known", Store())
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == 503
    assert body["message"].startswith("live events unavailable: Kafka at 127.0.0.1:1 is not reachable")
    assert "\n" not in response.text and "Traceback" not in response.text


def test_wrong_settings_leave_the_api_up_and_the_route_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATLOG_SERVE_LIVE_QUEUE", "0")
    response = _get(None, "/api/live/known")
    assert response.status_code == 503
    assert "CHATLOG_SERVE_LIVE_QUEUE" in response.json()["message"]


def test_the_hub_leaves_out_what_its_hidden_rule_hides() -> None:
    """The rule chatlog serve sets from the opt-out registry (serve/consent.py): hidden events are never
    delivered; the others are, each once."""
    hub = LiveHub(_settings(), prober=lambda _s, _t: Metadata(1))
    hub.fanout.add("chan0")
    events = [e for e in chat_events(40, channels=1) if e.kind == "PRIVMSG"]
    hidden_user = events[0].user_id
    assert hidden_user is not None
    hub.hidden = lambda event: event.user_id == hidden_user
    shown = hub.select([_record(e) for e in events], RecentIds(100))
    expected = [e.message_id for e in events if e.user_id != hidden_user]
    assert [s.message_id for s in shown] == expected
    assert 0 < len(expected) < len(events)
