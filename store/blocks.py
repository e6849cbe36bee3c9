"""Chat events into blocks: what the writers store, one row per block.

A block is lines of one partition, a channel's day or a user's month (:mod:`store.keys`), framed as one
value (:mod:`store.frame`). The streaming sink writes one block per partition per micro-batch; a backfill
and ``chatlog pack`` write a period's lines as few large blocks. A block's id is a hash of its lines' ids
(:func:`block_id`): the same lines make the same row, so a re-run batch rewrites its rows instead of adding
to them, and a reader drops a line it has read already (the same line in two blocks: a replay cut into
other batches, a backfill over logged time; ``chatlog pack`` merges them into one).

Each event is framed once (:func:`framed`) and its line shared by the channel's block and the user's.
Pure; no driver.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from core.irc_parse import tag_section
from core.irc_tags import plain_tags
from schemas.chat_event import ChatEvent
from store import frame
from store.keys import (
    day_of,
    event_channel_key,
    filed_under,
    is_canonical_uuid,
    line_order,
    message_id_bytes,
    month_of,
    uuid_text,
)
from store.stored_line import strip

Table = Literal["channel", "user"]
CHANNEL: Final[Table] = "channel"
USER: Final[Table] = "user"

BLOCK_NAMESPACE: Final = uuid.UUID("6b1e86f4-3f0a-5d2b-9c51-0f8f5f6c2a11")
"""uuid5 namespace of block ids (:func:`block_id`). Never change it: a re-run batch would add its blocks
again under new ids (readers drop the copies, but the bytes would stay until a pack)."""
MAX_BLOCK_LINES: Final = 20_000
"""Most lines in one block; a partition's lines beyond it go into further blocks."""
MAX_BLOCK_CHARS: Final = 8_000_000
"""About the most characters of stored lines in one block (a cell is one mutation: Cassandra refuses one
over half a commit log segment, 16 MiB by default; compressed, a block is a fraction of this)."""
CHANNEL_SPAN_MS: Final = 3_600_000
"""A channel's block never holds lines of two UTC hours: so the blocks that hold anything of a range start in
the range's first hour or later, and a read of the last seconds of a day (a chat client's recent messages)
looks at one hour of blocks, not the whole day (:mod:`store.read`)."""


@dataclass(slots=True)
class Framed:
    """An event as both of its blocks take it."""

    line: frame.Line
    channel_key: str
    user_key: str | None
    order: tuple[int, int, int, int]
    origin: Any = None
    """What the line came from (a Kafka record): dead-lettered if its block cannot be written."""


def chat_split(event: ChatEvent) -> frame.Split | None:
    """``(channel, user_login, text, is_action, plain)`` of a chat message with a text, as its event has
    them; None for every other event."""
    if event.kind != "PRIVMSG" or event.text is None:
        return None
    raw = event.raw
    if raw[-1:] == "\r":  # the parser leaves a trailing CR out of its raw line: no split
        return None
    section = tag_section(raw)
    return event.channel, event.user_login, event.text, event.is_action, bool(section) and plain_tags(section)


_MAX_MS: Final = (2**31 - 1) * 86_400_000
"""The latest (and, negated, earliest) ``sent_at`` whose UTC day fits a partition key's ``int``."""


def framed(event: ChatEvent, origin: Any = None, mid: bytes | None = None) -> Framed:
    """``event``'s line, with the keys of its blocks (``mid``: its message uuid's bytes, when the caller has
    them); ValueError for an id or key Cassandra cannot hold."""
    if not -_MAX_MS <= event.sent_at <= _MAX_MS:
        raise ValueError(f"sent_at {event.sent_at} is outside the days a partition key can hold")
    message_id = event.message_id
    if mid is None:
        mid = message_id_bytes(message_id)
    stored_id = message_id if is_canonical_uuid(message_id) else uuid_text(mid)
    stored = strip(event.raw, stored_id, event.sent_at)
    who = filed_under(event)
    line = (event.sent_at, mid, stored, event.received_at, chat_split(event), who)
    return Framed(line, event_channel_key(event), who, line_order(event.sent_at, mid), origin)


def block_id(ids: Iterable[bytes]) -> uuid.UUID:
    """The id of a block of the lines ``ids`` (their uuids' bytes, in the block's order): a name-based
    (SHA-1, version 5) uuid of them."""
    digest = hashlib.sha1(BLOCK_NAMESPACE.bytes + b"".join(ids), usedforsecurity=False)
    return uuid.UUID(bytes=digest.digest()[:16], version=5)


@dataclass(slots=True)
class Block:
    """One row to write: a partition's lines, framed."""

    table: Table
    key: tuple[Any, ...]
    """The partition key: ``(channel_key, day, part)`` or ``(channel_key, user_key, month, part)``."""
    first_at: int
    last_at: int
    lines: int
    block: uuid.UUID
    frame: bytes
    origins: list[Any] = field(default_factory=list)


def _cut(items: Sequence[Framed], span_ms: int | None) -> Iterator[Sequence[Framed]]:
    """``items`` (in order) as runs within :data:`MAX_BLOCK_LINES` and :data:`MAX_BLOCK_CHARS`, and within one
    ``span_ms`` window of time (None: any)."""
    start, chars, window = 0, 0, None
    for i, item in enumerate(items):
        size = len(item.line[2])
        here = None if span_ms is None else item.line[0] // span_ms
        if i > start and (i - start >= MAX_BLOCK_LINES or chars + size > MAX_BLOCK_CHARS or here != window):
            yield items[start:i]
            start, chars = i, 0
        chars += size
        window = here
    if start < len(items):
        yield items[start:]


def runs_of(table: Table, items: Iterable[Framed]) -> list[Sequence[Framed]]:
    """The lines of one partition's blocks, block by block, as :func:`blocks_of` frames them: in line order,
    each line once (by id), cut into blocks (a channel's at each UTC hour too: :data:`CHANNEL_SPAN_MS`)."""
    unique: dict[bytes, Framed] = {}
    for item in items:
        unique.setdefault(item.line[1], item)
    ordered = sorted(unique.values(), key=lambda f: f.order)
    return list(_cut(ordered, CHANNEL_SPAN_MS if table == CHANNEL else None))


def run_id(run: Sequence[Framed]) -> uuid.UUID:
    """The id of the block of ``run`` (one of :func:`runs_of`), without framing it."""
    return block_id(f.line[1] for f in run)


def blocks_of(
    table: Table, key: tuple[Any, ...], items: Iterable[Framed], *, level: int = frame.LIVE_LEVEL
) -> list[Block]:
    """The blocks of one partition's ``items``: the runs of :func:`runs_of`, each framed at ``level``."""
    return [block_of(table, key, run, level=level) for run in runs_of(table, items)]


def block_of(
    table: Table, key: tuple[Any, ...], run: Sequence[Framed], *, level: int = frame.LIVE_LEVEL
) -> Block:
    """The block of ``run`` (one of :func:`runs_of`) in partition ``key``, framed at ``level``."""
    lines = [f.line for f in run]
    return Block(
        table,
        key,
        lines[0][0],
        max(line[0] for line in lines),
        len(lines),
        run_id(run),
        frame.encode(lines, level=level),
        [f.origin for f in run if f.origin is not None],
    )


PartOf = Callable[[Table, tuple[Any, ...]], Callable[[int], int] | None]
"""Where the lines of a partition of part 0 go: None while part 0 takes them, else the part of a line's
send time (:func:`store.keys.channel_part`, :func:`store.keys.user_part`)."""


def partitions(items: Iterable[Framed], part_of: PartOf) -> dict[tuple[Table, tuple[Any, ...]], list[Framed]]:
    """``items`` grouped by the partitions of both copies: the channel's day and, for a line filed under a
    user, the user's month, each in the part ``part_of`` gives."""
    out: dict[tuple[Table, tuple[Any, ...]], list[Framed]] = {}
    for item in items:
        sent = item.line[0]
        day_key = (item.channel_key, day_of(sent))
        place = part_of(CHANNEL, day_key)
        out.setdefault((CHANNEL, (*day_key, 0 if place is None else place(sent))), []).append(item)
        user = item.user_key
        if user is None:
            continue
        month_key = (item.channel_key, user, month_of(sent))
        place = part_of(USER, month_key)
        out.setdefault((USER, (*month_key, 0 if place is None else place(sent))), []).append(item)
    return out


PART_LINES: Final = 200_000
"""A period written whole (a backfill, a migration) with more lines than this goes into its parts (a half
hour of a day, a day of a month): a partition's bound, as a writer's :data:`store.keys.PART_BYTES` is for
what a stream writes."""


class Cutter:
    """Blocks of partitions given line by line in order (a backfill's sorted lines): each partition's lines
    cut as :func:`blocks_of` cuts them, into the period's parts past :data:`PART_LINES`; a block is given back
    once it is full (:meth:`add`) or its partition is over (:meth:`close`)."""

    def __init__(self, table: Table, place: Callable[[int], int], *, level: int = frame.PACKED_LEVEL) -> None:
        self.table, self._place, self._level = table, place, level
        self._period: tuple[Any, ...] | None = None
        self._count = 0
        self._key: tuple[Any, ...] | None = None
        self._run: list[Framed] = []
        self._chars = 0
        self._window: int | None = None
        self._span = CHANNEL_SPAN_MS if table == CHANNEL else None

    def add(self, period: tuple[Any, ...], item: Framed) -> list[Block]:
        """Take the next line, of ``period`` (the partition key without its part); the blocks completed."""
        out: list[Block] = []
        if period != self._period:
            out += self.close()
            self._period, self._count = period, 0
        self._count += 1
        sent = item.line[0]
        part = 0 if self._count <= PART_LINES else self._place(sent)
        key = (*period, part)
        window = None if self._span is None else sent // self._span
        size = len(item.line[2])
        if self._run and (
            key != self._key
            or window != self._window
            or len(self._run) >= MAX_BLOCK_LINES
            or self._chars + size > MAX_BLOCK_CHARS
        ):
            out.append(self._block())
        self._key, self._window = key, window
        self._run.append(item)
        self._chars += size
        return out

    def close(self) -> list[Block]:
        """The block of the lines taken and not given back yet (none: empty)."""
        return [self._block()] if self._run else []

    def _block(self) -> Block:
        assert self._key is not None
        run, self._run, self._chars = self._run, [], 0
        lines = [f.line for f in run]
        return Block(
            self.table,
            self._key,
            lines[0][0],
            max(line[0] for line in lines),
            len(lines),
            block_id(line[1] for line in lines),
            frame.encode(lines, level=self._level),
            [f.origin for f in run if f.origin is not None],
        )
