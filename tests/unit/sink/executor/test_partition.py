"""One partition's write with its collaborators passed in (test doubles for Cassandra and the dead-letter
sink); index rows are rewritten at most once per refresh period, and outlive the rows they point to."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

from schemas.chat_event import ChatEvent, decode, encode
from sink.executor.cassandra import Item, Reject
from sink.executor.partition import Collaborators, IndexCache, write_partition
from sink.executor.rows import EventRows, TableRows
from sink.settings import SinkSettings
from tests.unit.sink.executor.test_rows import LIVE_COLUMNS


def test_a_written_key_is_fresh_until_the_refresh_period_ends() -> None:
    cache = IndexCache(refresh_s=300)
    assert not cache.fresh("k", now=1000.0)
    cache.add(["k"], when=1000.0)
    assert cache.fresh("k", now=1000.0)
    assert cache.fresh("k", now=1299.0)
    assert not cache.fresh("k", now=1300.0)
    assert not cache.fresh("other", now=1000.0)


def test_index_rows_live_one_refresh_period_longer_than_data_rows() -> None:
    cache = IndexCache(refresh_s=300)
    assert cache.ttl(86_400) == 86_700
    assert cache.ttl(0) == 0  # no expiry stays no expiry


def test_the_cache_is_bounded() -> None:
    cache = IndexCache(refresh_s=300, max_entries=10)
    cache.add(range(11), when=0.0)
    cache.add(["new"], when=0.0)
    assert cache.fresh("new", now=1.0)
    assert not cache.fresh(3, now=1.0)


# -- write_partition with its collaborators passed in (no Cassandra, no Kafka) ----------------------------


class _Bound:
    """A bound insert: its cells, TTL and routing key."""

    def __init__(self, table: str, cells: Sequence[Any], ttl: bytes) -> None:
        self.table = table
        self.cells = tuple(cells)
        self.ttl = ttl
        self.routing_key = repr((table, self.cells[:2])).encode()


class _Table:
    def __init__(self, rows: TableRows) -> None:
        self.rows = rows

    def bind(self, cells: Sequence[Any], ttl: bytes) -> _Bound:
        return _Bound(self.rows.table, cells, ttl)


class _Cassandra:
    """The writer's side of Cassandra: keeps what it is sent; rejects, as Cassandra would, every
    statement whose message id is in ``invalid``."""

    keyspace = "ks"

    def __init__(self, invalid: frozenset[str] = frozenset()) -> None:
        self._rows = EventRows(LIVE_COLUMNS)
        self.tables = [_Table(t) for t in self._rows.tables]
        self.invalid = invalid
        self.sent: list[Item] = []
        self.finished = 0

    def cells(self, event: ChatEvent) -> list[Any]:
        return list(self._rows.values(event))

    def ttl(self, seconds: int) -> bytes:
        return seconds.to_bytes(4, "big")

    def replicas(self, routing_key: bytes) -> Hashable:
        return ()

    def submit(self, chunk: Sequence[Item]) -> None:
        self.sent.extend(chunk)

    def finish(self, reject: Reject) -> tuple[int, int]:
        self.finished += 1
        bad = [i for i in self.sent if i.statement.cells and i.origin and self._rejected(i)]
        if bad:
            reject(bad, ValueError("Key length of 102400 is longer than maximum of 65535"))
        return 0, len(self.sent)

    def _rejected(self, item: Item) -> bool:
        event = decode(bytes(item.origin[0]))
        return event.message_id in self.invalid

    def tables_written(self) -> Counter[str]:
        return Counter(i.partition[0] for i in self.sent)


class _DeadLetters:
    def __init__(self) -> None:
        self.sent: list[tuple[bytes | None, str, str]] = []
        self.flushes = 0

    def send(self, value: bytes | None, reason: str, source: str) -> None:
        self.sent.append((value, reason, source))

    def flush(self) -> None:
        self.flushes += 1


def _event(n: int, **fields: Any) -> ChatEvent:
    base: dict[str, Any] = {
        "message_id": f"m{n}", "kind": "PRIVMSG", "channel": "chan", "user_login": "alice", "text": "hi",
        "sent_at": 1_700_000_000_000 + n, "received_at": 1_700_000_000_100 + n, "raw": f"line {n}",
    }  # fmt: skip
    base.update(fields)
    return ChatEvent(**base)


SETTINGS = SinkSettings(cassandra_ttl_s=86_400, topic_messages="chat.messages")  # type: ignore[call-arg]


def test_valid_events_become_rows_and_invalid_records_dead_letters_with_their_position() -> None:
    cassandra, letters = _Cassandra(), _DeadLetters()
    records: list[tuple[bytes | None, int, int]] = [
        (encode(_event(1)), 0, 10),
        (b"not json", 0, 11),
        (None, 2, 12),
        (encode(_event(2, user_login=None, kind="NOTICE")), 1, 13),
    ]

    stats = write_partition(records, SETTINGS, Collaborators(cassandra, letters), index_cache=IndexCache())

    assert (stats.events, stats.deadletters, stats.requests) == (2, 2, len(cassandra.sent))
    assert cassandra.tables_written() == Counter(
        {"messages_by_channel": 2, "messages_by_user": 1, "channel_buckets": 1}  # one bucket of one channel
    )
    assert stats.rows == cassandra.tables_written()
    data_ttl = {i.statement.ttl for i in cassandra.sent if i.partition[0] != "channel_buckets"}
    assert data_ttl == {(86_400).to_bytes(4, "big")}
    assert [(v, s) for v, _, s in letters.sent] == [
        (b"not json", "chat.messages/0/11"),
        (None, "chat.messages/2/12"),
    ]
    assert letters.sent[1][1] == "empty record (no value)"
    assert letters.flushes == 1


def test_without_a_dead_letter_sink_invalid_records_are_only_counted() -> None:
    cassandra = _Cassandra()
    stats = write_partition(
        [(b"{}", 0, 1)], SETTINGS, Collaborators(cassandra, None), index_cache=IndexCache()
    )
    assert (stats.events, stats.deadletters, cassandra.sent) == (0, 1, [])
    assert cassandra.finished == 1


def test_a_record_cassandra_rejects_becomes_a_dead_letter_and_not_an_event() -> None:
    cassandra, letters = _Cassandra(invalid=frozenset({"m2"})), _DeadLetters()
    records = [(encode(_event(n)), 0, n) for n in (1, 2, 3)]

    stats = write_partition(records, SETTINGS, Collaborators(cassandra, letters), index_cache=IndexCache())

    assert (stats.events, stats.deadletters) == (2, 1)
    assert stats.rows["messages_by_channel"] == 2 and stats.rows["messages_by_user"] == 2
    ((value, reason, source),) = letters.sent
    assert value == records[1][0] and source == "chat.messages/0/2"
    assert reason.startswith("Cassandra rejected it: ValueError: Key length")


def test_a_fresh_index_row_is_not_written_again() -> None:
    cache = IndexCache(refresh_s=300)
    first, second = _Cassandra(), _Cassandra()
    write_partition([(encode(_event(1)), 0, 1)], SETTINGS, Collaborators(first, None), index_cache=cache)
    write_partition([(encode(_event(2)), 0, 2)], SETTINGS, Collaborators(second, None), index_cache=cache)
    assert first.tables_written()["channel_buckets"] == 1
    assert second.tables_written()["channel_buckets"] == 0
