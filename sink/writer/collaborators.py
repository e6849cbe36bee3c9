"""What a partition is written with (:class:`Collaborators`): the storage's task writer and the dead-letter
sink, as the interfaces :func:`sink.writer.partition.write_partition` needs, and :func:`production`, the one
place the real ones are wired (tests pass doubles)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from schemas.chat_event import ChatEvent
    from sink.settings import SinkSettings
    from store.requests import Item
    from store.write import Written


class StorageTask(Protocol):
    """One task's writes (:class:`store.write.TaskWrite`)."""

    def add(self, event: ChatEvent, origin: Any = None, mid: bytes | None = None) -> None:
        """Take ``event`` (``mid``: its message uuid's bytes); ValueError for a value Cassandra cannot
        hold."""
        ...

    def add_names(self, event: ChatEvent) -> None:
        """Take ``event``'s name rows only."""
        ...

    def finish(self, reject: Callable[[Iterable[Item], BaseException], None] | None = None) -> Written:
        """Write what was taken; rejected writes go to ``reject`` with their items."""
        ...


class DeadLetterSink(Protocol):
    """Where dead letters go (:class:`sink.writer.deadletter.DeadLetters`)."""

    def send(self, value: bytes | None, reason: str, source: str) -> None: ...
    def flush(self) -> None:
        """Wait until every dead letter sent is acknowledged; raise if one was not."""
        ...


@dataclass(frozen=True)
class Collaborators:
    """What a partition is written with: a factory of the storage's task writers, and the dead-letter sink
    (None: invalid records are only counted)."""

    storage: Callable[[], StorageTask]
    dead_letters: DeadLetterSink | None


def write_options(settings: SinkSettings) -> Any:
    """How the sink's tasks write (:class:`store.write.WriteOptions`) with ``settings``."""
    from store.requests import BatchLimits
    from store.write import WriteOptions

    return WriteOptions(
        keyspace=settings.cassandra_keyspace,
        consistency=settings.sink_write_consistency,
        ttl_s=settings.cassandra_ttl_s,
        concurrency=settings.sink_write_concurrency,
        limits=BatchLimits(
            settings.sink_batch_max_rows, settings.sink_batch_max_partitions, settings.sink_batch_max_bytes
        ),
        retry_s=settings.sink_cassandra_retry_s,
        timeout_s=settings.sink_cassandra_timeout_s,
    )


def production(settings: SinkSettings, *, dead_letters: bool = True) -> Collaborators:
    """The real collaborators, wired here only: this process's Cassandra session writing to the keyspace of
    ``settings`` (connected and prepared on first use), and its dead-letter producer."""
    from sink.writer.deadletter import dead_letters_for
    from sink.writer.worker_setup import freeze_heap
    from store.write import TaskWrite, worker_session

    options = write_options(settings)
    session = worker_session(settings, settings.sink_cassandra_retry_s, settings.sink_cassandra_timeout_s)
    session.prepared(options.keyspace, options.consistency, options.retry_s)
    freeze_heap()  # the long-lived state (modules, session, prepared statements) now exists
    return Collaborators(
        lambda: TaskWrite(session, options), dead_letters_for(settings) if dead_letters else None
    )
