"""What a partition is written with (:class:`Collaborators`): the Cassandra writer and the dead-letter sink,
as the interfaces :func:`sink.writer.partition.write_partition` needs, and :func:`production`, the one place
the real ones are wired (tests pass doubles)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from schemas.chat_event import ChatEvent
    from sink.settings import SinkSettings
    from sink.writer.cassandra import Item, Reject
    from sink.writer.rows import TableRows


class TableTarget(Protocol):
    """One table of the writer: how its row is taken from an event, and its bound insert."""

    @property
    def rows(self) -> TableRows: ...

    def bind(self, cells: Sequence[Any], ttl: bytes) -> Any:
        """A statement inserting ``cells`` (with a ``routing_key``)."""
        ...


class NameTarget(Protocol):
    """The name history's inserts (:class:`sink.writer.cassandra.PreparedNames`)."""

    def bind(self, table: str, key: Sequence[str], sent_at: int, ttl: bytes) -> tuple[Any, Any]:
        """The ``first_seen`` and ``last_seen`` inserts of one row (each with a ``routing_key``)."""
        ...


class CassandraTarget(Protocol):
    """What :func:`write_partition` needs of the Cassandra writer
    (:class:`sink.writer.cassandra.CassandraWriter`)."""

    keyspace: str

    @property
    def tables(self) -> Sequence[TableTarget]: ...

    @property
    def names(self) -> NameTarget: ...

    def cells(self, event: ChatEvent) -> list[Any]: ...

    def half_day(self, event: ChatEvent) -> Any:
        """The ``period`` cell of the event's half-day partition (a spilled user-month)."""
        ...

    def spill(self, key: Sequence[Any], ttl: bytes) -> Any:
        """A statement setting ``spilled`` in the user month partition of key cells ``key`` (with a
        ``routing_key``)."""
        ...

    def ttl(self, seconds: int) -> bytes: ...

    def replicas(self, routing_key: bytes) -> Hashable: ...

    def submit(self, chunk: Sequence[Item]) -> None: ...

    def finish(self, reject: Reject) -> tuple[int, int]:
        """Wait for every write, retry what failed; returns (re-tries, requests)."""
        ...


class DeadLetterSink(Protocol):
    """Where dead letters go (:class:`sink.writer.deadletter.DeadLetters`)."""

    def send(self, value: bytes | None, reason: str, source: str) -> None: ...

    def flush(self) -> None:
        """Wait until every dead letter sent is acknowledged; raise if one was not."""
        ...


@dataclass(frozen=True)
class Collaborators:
    """What a partition is written with: the Cassandra writer, and the dead-letter sink (None: invalid
    records are only counted, as a backfill does unless told to send them again)."""

    cassandra: CassandraTarget
    dead_letters: DeadLetterSink | None


def production(settings: SinkSettings, *, dead_letters: bool = True) -> Collaborators:
    """The real collaborators, wired here only: this process's Cassandra session writing to the keyspace
    of ``settings`` (connected and prepared on first use), and its dead-letter producer."""
    from sink.writer.cassandra import writer
    from sink.writer.deadletter import dead_letters_for
    from sink.writer.worker_setup import freeze_heap

    cassandra = writer(settings)
    freeze_heap()  # the long-lived state (modules, session, prepared statements) now exists
    return Collaborators(cassandra, dead_letters_for(settings) if dead_letters else None)
