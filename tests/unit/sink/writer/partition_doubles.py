"""Doubles of the collaborators :func:`sink.writer.partition.write_partition` is given: the storage's task
writer (:class:`StorageDouble`, a :class:`sink.writer.collaborators.StorageTask` that keeps what it is given,
frames it into blocks with the real :mod:`store.blocks`, and rejects the blocks it is told to as Cassandra
would) and the dead-letter sink (:class:`DeadLettersDouble`). No Cassandra, no Kafka: what the writer decides
(which records are dead letters, dropped, copies, or taken) is what these record."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from cassandra import InvalidRequest

from schemas.chat_event import ChatEvent
from sink.writer.collaborators import Collaborators
from store import frame
from store.blocks import Block, Framed, blocks_of, framed, partitions
from store.keys import message_id_bytes
from store.requests import Item
from store.write import BLOCK_TABLES, Written

REJECTION = "Error from server: code=2200 [Invalid query] message=" + (
    '"Key length of 102400 is longer than maximum of 65535"'
)


@dataclass
class Taken:
    """What the storage was given for one event."""

    event: ChatEvent
    origin: Any
    mid: bytes | None


@dataclass
class StorageDouble:
    """A task writer: takes events (refusing with ValueError those of the ids in ``refuse``, as the storage
    refuses a value Cassandra cannot hold), frames them into blocks on :meth:`finish`, and rejects as invalid
    every block holding an id of ``reject`` (handing its items, with the origins of its lines, to the
    writer's ``reject``); ``down``: every write fails (Cassandra down past the retry bound)."""

    refuse: frozenset[str] = frozenset()
    reject: frozenset[str] = frozenset()
    down: bool = False
    taken: list[Taken] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    rejected: list[Block] = field(default_factory=list)
    named: list[ChatEvent] = field(default_factory=list)
    """Events whose name rows only were taken (a backfill's)."""
    finished: int = 0
    _items: list[Framed] = field(default_factory=list)

    def add(self, event: ChatEvent, origin: Any = None, mid: bytes | None = None) -> None:
        if event.message_id in self.refuse:
            raise ValueError("a key part is longer than 64 KiB")
        item = framed(event, origin, mid)  # ValueError for an id that is no uuid's, as the storage's
        self.taken.append(Taken(event, origin, mid))
        self._items.append(item)

    def add_names(self, event: ChatEvent) -> None:
        self.named.append(event)

    def finish(self, reject: Callable[[Iterable[Item], BaseException], None] | None = None) -> Written:
        self.finished += 1
        if self.down:
            raise RuntimeError("Cassandra is down")
        self.blocks = [
            block for (table, key), items in partitions(self._items, lambda _t, _k: None).items()
            for block in blocks_of(table, key, items)
        ]  # fmt: skip
        bad = {message_id_bytes(m) for m in self.reject}
        for block in self.blocks:
            if bad & set(frame.decode(block.frame).ids()):
                self.rejected.append(block)
                partition = (BLOCK_TABLES[block.table], repr(block.key).encode())
                item = Item((), partition, len(block.frame), block, block.origins)
                if reject is None:
                    raise AssertionError("a rejected write without a reject callback")
                reject([item], InvalidRequest(REJECTION))
        rows = Counter(BLOCK_TABLES[block.table] for block in self.blocks)
        return Written(events=len(self.taken), rows=dict(rows), requests=len(self.blocks))

    def ids(self) -> list[str]:
        """The message ids of the events taken, in order."""
        return [t.event.message_id for t in self.taken]


class DeadLettersDouble:
    """The dead-letter sink: keeps what it is sent, counts its flushes."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes | None, str, str]] = []
        self.flushes = 0

    def send(self, value: bytes | None, reason: str, source: str) -> None:
        self.sent.append((value, reason, source))

    def flush(self) -> None:
        self.flushes += 1


def wired(storage: StorageDouble, letters: DeadLettersDouble | None = None) -> Collaborators:
    """Collaborators whose every task is ``storage`` (one partition written per test)."""
    return Collaborators(lambda: storage, letters)
