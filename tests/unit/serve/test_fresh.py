"""serve/fresh.py without Kafka: the stored lines (an in-memory store) and the unwritten events (a reader
double) merged in time order, each message once, in both directions; a user's lines; today's day and
this month added when only Kafka has them; ranges in the past left to the store."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from core.irc_parse import parse_line
from core.testing import twitch_line
from schemas.chat_event import ChatEvent
from serve.fresh import HORIZON_MS, FreshStore
from serve.testing import MemoryStore
from serve.unwritten import Unwritten
from store.line import Run, each_line
from store.protocol import Named

NOW = 1_795_000_000_000  # ms


def _event(n: int, *, at: int, login: str = "alice", user_id: str = "7") -> ChatEvent:
    line = twitch_line(
        "PRIVMSG", "chan", sent_at=at, login=login, user_id=user_id, room_id="500", text=f"line {n}",
        message_id=f"00000000-0000-0000-0000-{n:012d}",
    )  # fmt: skip
    event = parse_line(line, received_at=at)
    assert event is not None
    return event


class Reader:
    """The unwritten events a reader double gives, and how often it was asked."""

    def __init__(self, events: list[ChatEvent]) -> None:
        self.events = events
        self.reads = 0

    def read(self, channel: str, lo_ms: int = 0, hi_ms: int | None = None) -> Unwritten:
        self.reads += 1
        return Unwritten(events=[e for e in self.events if e.channel == channel])


async def _ids(lines: AsyncIterator[object]) -> list[str]:
    return [line.event.message_id[-2:] async for line in lines]  # type: ignore[attr-defined]


def test_stored_and_unwritten_lines_merge_in_order_each_once() -> None:
    stored = [_event(1, at=NOW - 5000), _event(2, at=NOW - 4000), _event(3, at=NOW - 3000)]
    unwritten = [_event(3, at=NOW - 3000), _event(4, at=NOW - 2500), _event(5, at=NOW - 1000)]
    unwritten += [_event(6, at=NOW - 4500, login="bob", user_id="8")]  # an earlier one, not written yet
    store = FreshStore(MemoryStore(stored), Reader(unwritten), clock=lambda: NOW / 1000)  # type: ignore[arg-type]

    async def main() -> None:
        assert await _ids(each_line(store.channel_runs("chan", 0, NOW + 1))) == [
            "01",
            "06",
            "02",
            "03",
            "04",
            "05",
        ]
        assert await _ids(each_line(store.channel_runs("chan", 0, NOW + 1, reverse=True))) == [
            "05",
            "04",
            "03",
            "02",
            "06",
            "01",
        ]
        assert await _ids(each_line(store.channel_runs("chan", NOW - 3500, NOW - 2000))) == ["03", "04"]
        assert await _ids(each_line(store.user_runs("chan", "bob", 0, NOW + 1))) == ["06"]
        assert await _ids(each_line(store.user_runs("chan", "alice", 0, NOW + 1))) == [
            "01",
            "02",
            "03",
            "04",
            "05",
        ]
        past = NOW - HORIZON_MS - 1
        assert await _ids(each_line(store.channel_runs("chan", 0, past))) == []  # the store's answer alone

    asyncio.run(main())


def test_today_and_this_month_are_listed_when_only_kafka_has_them() -> None:
    yesterday = NOW - 86_400_000
    reader = Reader([_event(9, at=NOW)])
    store = FreshStore(
        MemoryStore([_event(1, at=yesterday)]),
        reader,  # type: ignore[arg-type]
        clock=lambda: NOW / 1000,
        share_s=60.0,
    )
    today = datetime.fromtimestamp(NOW / 1000, UTC).date()

    async def main() -> None:
        assert await store.latest_day("chan") == today
        days = await store.channel_days("chan")
        assert days[0] == today and len(days) == 2
        assert await store.latest_user_month("chan", "alice") == (today.year, today.month)
        assert await store.latest_day("elsewhere") is None
        asked = reader.reads
        await store.latest_day("chan")  # within the shared window: no second Kafka read
        assert reader.reads == asked

    asyncio.run(main())


def test_a_kafka_that_failed_is_not_asked_again_for_a_few_seconds() -> None:
    from confluent_kafka import KafkaError, KafkaException

    from serve.settings import FreshSettings
    from serve.unwritten import UnwrittenReader

    class Down:
        calls = 0

        def list_topics(self, topic: str, timeout: float) -> None:
            Down.calls += 1
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))

        def close(self) -> None:
            return None

    reader = UnwrittenReader(FreshSettings(), "ks", consumer=Down())  # type: ignore[call-arg]
    first, second = reader.read("chan"), reader.read("chan")
    assert not first.complete and not second.complete and first.events == []
    assert Down.calls == 1 and reader.failures == 1  # the second answered without waiting for Kafka


class _HeldReader(Reader):
    """A reader double whose read waits until the stored lines' read has started (or gives up after 2 s)."""

    def __init__(self, events: list[ChatEvent], started: threading.Event) -> None:
        super().__init__(events)
        self.started = started
        self.waited: list[bool] = []

    def read(self, channel: str, lo_ms: int = 0, hi_ms: int | None = None) -> Unwritten:
        self.waited.append(self.started.wait(2.0))
        return super().read(channel, lo_ms, hi_ms)


class _Started(MemoryStore):
    """An in-memory store that notes when a read of lines asks for its first line."""

    def __init__(self, events: list[ChatEvent], started: threading.Event) -> None:
        super().__init__(events)
        self.started = started

    def channel_runs(self, channel: Named, lo: int, hi: int, *, reverse: bool = False) -> AsyncIterator[Run]:
        return self._noted(super().channel_runs(channel, lo, hi, reverse=reverse))

    async def _noted(self, runs: AsyncIterator[Run]) -> AsyncIterator[Run]:
        self.started.set()
        async for run in runs:
            yield run


def test_the_stored_lines_are_read_beside_the_kafka_read_not_after_it() -> None:
    """A read of the present asks the store for its lines while Kafka's unwritten events are still being
    read: the Kafka read here answers only once the store has been asked (before, it gave up after 2 s and
    the store was asked after it). Merged as ever, also when the store has nothing, and when it is closed
    before its end."""
    started = threading.Event()
    stored = [_event(1, at=NOW - 5000), _event(2, at=NOW - 4000)]
    reader = _HeldReader([_event(3, at=NOW - 3000)], started)
    store = FreshStore(_Started(stored, started), reader, clock=lambda: NOW / 1000, share_s=0)  # type: ignore[arg-type]

    async def main() -> tuple[list[str], list[str], str]:
        merged = await _ids(each_line(store.channel_runs("chan", 0, NOW + 1)))
        started.clear()
        none = await _ids(
            each_line(store.channel_runs("chan", NOW - 3500, NOW + 1))
        )  # the store has none there
        started.clear()
        lines = each_line(store.channel_runs("chan", 0, NOW + 1))
        first = await anext(lines)
        await lines.aclose()  # type: ignore[attr-defined]
        return merged, none, first.event.message_id[-2:]

    assert asyncio.run(main()) == (["01", "02", "03"], ["03"], "01")
    assert reader.waited == [True, True, True]
