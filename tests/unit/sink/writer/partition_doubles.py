"""Doubles of the collaborators :func:`sink.writer.partition.write_partition` is given: the writer's side
of Cassandra (:class:`CassandraDouble`: keeps what it is sent, rejects what Cassandra would) and the
dead-letter sink (:class:`DeadLettersDouble`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

from schemas.cql import user_period
from sink.writer.cassandra import Item, Reject
from sink.writer.rows import EventRows, TableRows

from schemas.chat_event import ChatEvent, decode
from tests.unit.sink.writer.live_columns import LIVE_COLUMNS


class Bound:
    """A bound insert: its cells (of ``columns``), TTL and routing key."""

    def __init__(self, table: str, cells: Sequence[Any], ttl: bytes, columns: Sequence[str] = ()) -> None:
        self.table = table
        self.columns = tuple(columns)
        self.cells = tuple(cells)
        self.ttl = ttl
        self.routing_key = repr((table, self.cells[:2])).encode()


class TableDouble:
    """A prepared insert into one table: binds to a :class:`Bound`."""

    def __init__(self, rows: TableRows) -> None:
        self.rows = rows

    def bind(self, cells: Sequence[Any], ttl: bytes) -> Bound:
        return Bound(self.rows.table, cells, ttl, self.rows.columns)


class NameBound:
    """A bound name-history insert: which cell, of which row, seen when, with which TTL."""

    def __init__(self, table: str, column: str, key: Sequence[str], sent_at: int, ttl: bytes) -> None:
        self.table, self.column, self.key, self.sent_at, self.ttl = table, column, tuple(key), sent_at, ttl
        self.cells = self.key
        self.routing_key = repr((table, self.key[0])).encode()


class NamesDouble:
    """The prepared name-history inserts: a sighting binds to its first and last seen cells."""

    def bind(self, table: str, key: Sequence[str], sent_at: int, ttl: bytes) -> tuple[NameBound, NameBound]:
        return (
            NameBound(table, "first_seen", key, sent_at, ttl),
            NameBound(table, "last_seen", key, sent_at, ttl),
        )


class CassandraDouble:
    """The writer's side of Cassandra: keeps what it is sent; rejects, as Cassandra would, every
    statement whose message id is in ``invalid``."""

    keyspace = "ks"

    def __init__(self, invalid: frozenset[str] = frozenset()) -> None:
        self._rows = EventRows(LIVE_COLUMNS)
        self.tables = [TableDouble(t) for t in self._rows.tables]
        self.names = NamesDouble()
        self.invalid = invalid
        self.sent: list[Item] = []
        self.finished = 0

    def cells(self, event: ChatEvent) -> list[Any]:
        return list(self._rows.values(event))

    def half_day(self, event: ChatEvent) -> Any:
        return user_period(event.sent_at)

    def spill(self, key: Sequence[Any], ttl: bytes) -> Bound:
        return Bound("chat_by_user.spilled", key, ttl, ("channel_key", "user_key", "period"))

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


class DeadLettersDouble:
    """The dead-letter sink: keeps what it is sent, counts its flushes."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes | None, str, str]] = []
        self.flushes = 0

    def send(self, value: bytes | None, reason: str, source: str) -> None:
        self.sent.append((value, reason, source))

    def flush(self) -> None:
        self.flushes += 1
