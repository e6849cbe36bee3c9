"""Opt-outs enforced by real ingesters (issue 20), against the real Kafka and the real IRC server.

The chatters are IRC clients of InspIRCd that speak as Twitch users of Twitch rooms: their lines carry
the client-only tags ``+user-id`` / ``+room-id`` / ``+badges``, which InspIRCd relays and the ingesters
take as ids (``CHATLOG_INGEST_CLIENT_ID_TAGS``, for test servers). Ground truth: the message topic
(what reached Kafka), the IRC server's NAMES (who is in a channel), the opt-out topic.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from consent.publish import OptOutPublisher
from consent.registry import OptOutRegistry
from consent.settings import ConsentSettings
from core.settings import KafkaSettings, StackSettings
from ingest.registry import Registry
from lab.demo.observer import NamesObserver, worker_of
from lab.demo.supervisor import Supervisor
from schemas import chat_event
from schemas.chat_event import ChatEvent
from tests.integration.ingest.ingester_env import QUICK, ingester_env

pytestmark = pytest.mark.integration

PART_WITHIN_S = 10.0


@pytest.fixture
def consent(fresh_topics: StackSettings, unique: str) -> ConsentSettings:
    """Consent settings on the test's topics (their opt-out topic is the test's own, as every topic)."""
    kafka = {name: getattr(fresh_topics, name) for name in KafkaSettings.model_fields}
    assert kafka["topic_optout"] == f"t{unique}.optout"
    return ConsentSettings(**kafka)


def _env(settings: ConsentSettings, irc_port: int, unique: str) -> dict[str, str]:
    more = {
        "CHATLOG_TOPIC_OPTOUT": settings.topic_optout,
        "CHATLOG_INGEST_CLIENT_ID_TAGS": "true",
        "CHATLOG_INGEST_SHUTDOWN_DRAIN_S": "1",
        **QUICK,
    }
    return ingester_env(settings, irc_port, f"test-{unique}", more)


class Chatter:
    """An IRC client speaking as Twitch user ``user_id`` (client tags relayed by InspIRCd)."""

    def __init__(self, port: int, user_id: str, *, badges: str | None = None) -> None:
        self.port, self.user_id, self.badges = port, user_id, badges
        self.nick = f"u{user_id}x{secrets.token_hex(3)}"
        self._writer: asyncio.StreamWriter | None = None
        self._reader: asyncio.StreamReader | None = None
        self._drain: asyncio.Task[None] | None = None

    async def connect(self, channels: list[str]) -> None:
        self._reader, self._writer = await asyncio.open_connection("127.0.0.1", self.port)
        self._writer.write(
            f"CAP REQ :message-tags\r\nNICK {self.nick}\r\nUSER {self.nick} 0 * :t\r\nCAP END\r\n".encode()
        )
        while " 001 " not in (await asyncio.wait_for(self._reader.readline(), 15)).decode():
            pass
        self._writer.write("".join(f"JOIN #{c}\r\n" for c in channels).encode())
        await self._writer.drain()
        self._drain = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self._reader is not None and self._writer is not None
        while line := await self._reader.readline():
            if line.startswith(b"PING"):
                self._writer.write(b"PONG" + line[4:])

    async def say(self, channel: str, room_id: str, text: str) -> None:
        assert self._writer is not None
        tags = f"+user-id={self.user_id};+room-id={room_id}"
        if self.badges:
            tags += f";+badges={self.badges}"
        self._writer.write(f"@{tags} PRIVMSG #{channel} :{text}\r\n".encode())
        await self._writer.drain()

    async def close(self) -> None:
        if self._drain is not None:
            self._drain.cancel()
        if self._writer is not None:
            with contextlib.suppress(ConnectionError):
                self._writer.write(b"QUIT :bye\r\n")
                await self._writer.drain()
            self._writer.close()


class Topic:
    """Every chat event of the message topic so far (read incrementally by a plain consumer)."""

    def __init__(self, settings: KafkaSettings) -> None:
        self.consumer = Consumer(
            {
                **settings.kafka_client_config(),
                "group.id": f"verify-{secrets.token_hex(6)}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        self.consumer.subscribe([settings.topic_messages])
        self.events: list[ChatEvent] = []

    def read(self) -> list[ChatEvent]:
        for msg in self.consumer.consume(10_000, 0.5):
            if msg.error() is None:
                self.events.append(chat_event.decode(msg.value() or b""))
        return self.events

    def texts(self) -> list[str]:
        return [e.text or "" for e in self.read() if e.kind == "PRIVMSG"]

    async def until(self, what: str, done: Callable[[list[str]], bool], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not done(self.texts()):
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.2)

    def close(self) -> None:
        self.consumer.close()


async def _members(observer: NamesObserver, channels: list[str], workers: list[str]) -> dict[str, set[str]]:
    members = await observer.members(channels)
    return {ch: {w for n in nicks if (w := worker_of(n, workers))} for ch, nicks in members.items()}


async def _until_members(
    observer: NamesObserver,
    channels: list[str],
    workers: list[str],
    want: dict[str, set[str]],
    timeout: float,
) -> float:
    """Seconds until NAMES shows exactly ``want`` (channel -> ingesters in it)."""
    started = time.monotonic()
    while True:
        got = await _members(observer, channels, workers)
        if got == want:
            return time.monotonic() - started
        assert time.monotonic() - started < timeout, f"NAMES {got}, expected {want}"
        await asyncio.sleep(0.2)


def _metric(log: Path, name: str) -> float:
    port = re.search(r"metrics on port (\d+)", log.read_text())
    assert port, log.read_text()[-2000:]
    text = urllib.request.urlopen(f"http://127.0.0.1:{port.group(1)}/metrics", timeout=10).read().decode()
    found = re.search(rf"^{name}\{{[^}}]*\}} (\S+)$", text, re.M)
    assert found, f"{name} not in /metrics"
    return float(found.group(1))


def _start_pair(sup: Supervisor, unique: str) -> list[str]:
    """One ingester in each of two replica groups: every channel is logged twice."""
    workers = [f"o{unique[:6]}r{r}" for r in (0, 1)]
    for replica, worker in enumerate(workers):
        sup.start(worker, ["ingest", "--replica", str(replica), "--worker-id", worker])
    return workers


def test_opted_out_users_are_dropped_and_opted_out_channels_parted_on_both_replicas(
    consent: ConsentSettings, fresh_topics: StackSettings, unique: str, tmp_path: Path
) -> None:
    channels = [f"o{unique}_a", f"o{unique}_b"]
    rooms = {channels[0]: "9001", channels[1]: "9002"}
    Registry(fresh_topics).add(channels)
    publisher = OptOutPublisher(consent)
    topic = Topic(consent)

    async def scenario(sup: Supervisor) -> None:
        workers = _start_pair(sup, unique)
        observer = NamesObserver("127.0.0.1", fresh_topics.irc_port)
        await observer.connect()
        alice, bob = Chatter(fresh_topics.irc_port, "1001"), Chatter(fresh_topics.irc_port, "1002")
        try:
            everyone = set(workers)
            await _until_members(observer, channels, workers, dict.fromkeys(channels, everyone), 60)
            for chatter in (alice, bob):
                await chatter.connect(channels)
            await asyncio.sleep(0.5)

            # 1. both users are logged (twice: two replicas), then alice opts out: only bob's lines arrive
            for ch in channels:
                await alice.say(ch, rooms[ch], f"before-alice-{ch}")
                await bob.say(ch, rooms[ch], f"before-bob-{ch}")
            await topic.until("the lines before the opt-out", lambda t: len(t) == 8)
            publisher.add("user", "1001", reason="test", by="test")
            await asyncio.sleep(2.0)  # the registries read it within about a second
            for n in range(5):
                for ch in channels:
                    await alice.say(ch, rooms[ch], f"after-alice-{n}-{ch}")
                    await bob.say(ch, rooms[ch], f"after-bob-{n}-{ch}")
            await topic.until(
                "bob's lines after the opt-out", lambda t: sum("after-bob" in x for x in t) == 20
            )
            await asyncio.sleep(1.0)
            texts = topic.texts()
            assert not [t for t in texts if "after-alice" in t], "an opted-out user's line reached Kafka"
            for worker in workers:
                assert _metric(sup.children[worker].log, "chatlog_ingest_optout_dropped_total") == 10

            # 2. channel a opts out: both replicas part it within seconds (they learned its room id
            #    from its lines); channel b stays; a lift rejoins it
            publisher.add("channel", rooms[channels[0]], reason="test", by="test")
            want = {channels[0]: set(), channels[1]: everyone}
            took = await _until_members(observer, channels, workers, want, PART_WITHIN_S)
            await bob.say(channels[0], rooms[channels[0]], "in-an-opted-out-channel")
            await bob.say(channels[1], rooms[channels[1]], "in-a-logged-channel")
            await topic.until("the logged channel's line", lambda t: t.count("in-a-logged-channel") == 2)
            publisher.remove("channel", rooms[channels[0]], by="test")
            back = await _until_members(observer, channels, workers, dict.fromkeys(channels, everyone), 10)
            publisher.remove("user", "1001", by="test")
            await asyncio.sleep(2.0)
            await alice.say(channels[0], rooms[channels[0]], "alice-is-back")
            await topic.until("alice's line after the lift", lambda t: t.count("alice-is-back") == 2)
            assert "in-an-opted-out-channel" not in topic.texts()
            print(f"channel opt-out: parted on both replicas in {took:.1f}s, back {back:.1f}s after the lift")
        finally:
            for chatter in (alice, bob):
                await chatter.close()
            await observer.close()
        for worker in workers:
            assert sup.terminate(worker, timeout=40) == 0, sup.children[worker].log.read_text()[-3000:]

    try:
        with Supervisor(tmp_path / "logs", env=_env(consent, fresh_topics.irc_port, unique)) as sup:
            asyncio.run(scenario(sup))
    finally:
        topic.close()


def test_self_service_opt_out_through_the_irc_server(
    consent: ConsentSettings, fresh_topics: StackSettings, unique: str, tmp_path: Path
) -> None:
    channel, room = f"s{unique}", "9100"
    Registry(fresh_topics).add([channel])
    publisher = OptOutPublisher(consent)
    registry = OptOutRegistry(consent, consent.topic_optout)
    topic = Topic(consent)

    async def eventually(what: str, done: Callable[[], bool], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.1)

    async def scenario(sup: Supervisor) -> None:
        workers = _start_pair(sup, unique)
        observer = NamesObserver("127.0.0.1", fresh_topics.irc_port)
        await observer.connect()
        port = fresh_topics.irc_port
        carol, dave = Chatter(port, "2001"), Chatter(port, "2002")
        owner = Chatter(port, room, badges="broadcaster/1")
        try:
            await _until_members(observer, [channel], workers, {channel: set(workers)}, 60)
            for chatter in (carol, dave, owner):
                await chatter.connect([channel])
            code = publisher.issue_code(by="test", ttl_s=300).code
            channel_code = publisher.issue_code(by="test", ttl_s=300).code
            await eventually("the codes in the registry", lambda: registry.code(channel_code) is not None)
            read = registry.records_read  # both codes: every ingester's registry reads them too
            await eventually(
                "the codes in the ingesters' registries",
                lambda: all(
                    _metric(sup.children[w].log, "chatlog_ingest_optout_records_read_total") >= read
                    for w in workers
                ),
            )

            await dave.say(channel, room, "!chatlog optout zzzzzzzz")  # no such code: a chat line
            await carol.say(channel, room, f"!chatlog optout {code}")
            await eventually("carol's opt-out", lambda: registry.optout("user", "2001") is not None)
            record = registry.optout("user", "2001")
            assert record is not None and record.by == f"code:{code}" and not record.keep_history
            await eventually(
                "the code retired", lambda: registry.code(code) is None
            )  # within its ttl: retired
            await carol.say(channel, room, "carol-after")
            await dave.say(channel, room, "dave-after")
            await topic.until("dave's lines", lambda t: t.count("dave-after") == 2)
            await asyncio.sleep(1.0)
            texts = topic.texts()
            assert texts.count("!chatlog optout zzzzzzzz") == 2
            assert not [t for t in texts if code in t or t == "carol-after"], texts

            # the broadcaster opts the channel out: both replicas part it
            await owner.say(channel, room, f"!chatlog optout {channel_code} channel")
            await eventually("the channel's opt-out", lambda: registry.optout("channel", room) is not None)
            await _until_members(observer, [channel], workers, {channel: set()}, PART_WITHIN_S)
            assert registry.code(channel_code) is None and registry.users() == {"2001"}
            for worker in workers:
                text = sup.children[worker].log.read_text()
                assert "Traceback" not in text, text[-3000:]
        finally:
            for chatter in (carol, dave, owner):
                await chatter.close()
            await observer.close()
        for worker in workers:
            assert sup.terminate(worker, timeout=40) == 0, sup.children[worker].log.read_text()[-3000:]

    registry.start()
    try:
        registry.wait_ready(30)
        with Supervisor(tmp_path / "logs", env=_env(consent, fresh_topics.irc_port, unique)) as sup:
            asyncio.run(scenario(sup))
    finally:
        registry.close()
        topic.close()
