""":class:`~serve.store.LogStore` over today's tables, keyed by channel login and 5-minute buckets.

* A channel's events: the buckets of ``channel_buckets`` in the range, each read from
  ``messages_by_channel`` page by page, the next :attr:`read_ahead` buckets' first pages requested while
  one is streamed (as :func:`serve.logs.read_events` does, but awaited: :mod:`serve.aiocql`).
* A user's events: the same candidate buckets, first probed :attr:`probe_batch` at a time with one
  ``bucket IN ? PER PARTITION LIMIT 1`` query on ``messages_by_user`` (a user writes in few of a channel's
  buckets: a month of a busy channel is 8,640 buckets, ~44 probes), then only the buckets that hold
  something are read.
* Channels: ``SELECT DISTINCT channel FROM channel_buckets`` (partition keys only), each channel's id
  from one row of its newest bucket; cached :attr:`channels_ttl_s`, which is also how a channel id is
  resolved to a login.
* A user id cannot be resolved without scanning: these tables hold ``user_id`` only as a column of rows
  keyed by login. :meth:`CassandraStore.user_by_id` raises :class:`~serve.store.LookupUnsupported`; the
  id-keyed tables will answer it.
* Counts: a user's, server-side (``COUNT(*)`` over :attr:`probe_batch` user partitions per query); by
  sender over a channel range, two small columns of every row streamed (:meth:`CassandraStore.senders`).
* Random picks: a random bucket of the channel, then the first event at or after (else before) a random
  instant in it; a user's: buckets probed in random order, a random event of the first bucket that holds
  any. Cheap, but not uniform over events (an event in a quiet bucket is likelier).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final, TypeVar

from schemas.chat_event import FIELD_NAMES, ChatEvent
from schemas.cql import BUCKET_MS, bucket_of
from serve.aiocql import PagedQuery
from serve.logs import row_event
from serve.store import Channel, LookupUnsupported

_COLUMNS: Final = ", ".join(FIELD_NAMES)
_EPOCH: Final = datetime(1970, 1, 1)
_MS_DELTA: Final = timedelta(milliseconds=1)
_CONCURRENT_LOOKUPS: Final = 16
_RANDOM_TRIES: Final = 8
T = TypeVar("T")


def _ms(value: datetime) -> int:
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return (value - _EPOCH) // _MS_DELTA


def _day(ms: int) -> date:
    return datetime.fromtimestamp(ms / 1000, UTC).date()


class CassandraStore:
    """The logs of one keyspace, read through a connected cassandra-driver ``session``."""

    def __init__(
        self,
        session: Any,
        *,
        fetch_size: int = 1000,
        read_ahead: int = 16,
        probe_batch: int = 200,
        channels_ttl_s: float = 60.0,
    ) -> None:
        self.session = session
        self.read_ahead = read_ahead
        self.probe_batch = probe_batch
        self.channels_ttl_s = channels_ttl_s
        self._channels: tuple[float, list[Channel]] | None = None
        self._channels_lock = asyncio.Lock()
        prepare = session.prepare
        window = "AND sent_at >= ? AND sent_at < ?"
        self._stmts: dict[str, Any] = {
            "distinct": prepare("SELECT DISTINCT channel FROM channel_buckets"),
            "buckets": prepare(
                "SELECT bucket FROM channel_buckets WHERE channel = ? AND bucket >= ? AND bucket < ?"
            ),
            "buckets_desc": prepare(
                "SELECT bucket FROM channel_buckets WHERE channel = ? AND bucket >= ? AND bucket < ? "
                "ORDER BY bucket DESC"
            ),
            "latest": prepare(
                "SELECT bucket FROM channel_buckets WHERE channel = ? ORDER BY bucket DESC LIMIT 1"
            ),
            "channel_id": prepare(
                "SELECT channel_id FROM messages_by_channel WHERE channel = ? AND bucket = ? LIMIT 1"
            ),
            "channel_rows": prepare(
                f"SELECT {_COLUMNS} FROM messages_by_channel WHERE channel = ? AND bucket = ? {window}"
            ),
            "channel_rows_desc": prepare(
                f"SELECT {_COLUMNS} FROM messages_by_channel WHERE channel = ? AND bucket = ? {window} "
                "ORDER BY sent_at DESC, message_id DESC"
            ),
            "user_rows": prepare(
                f"SELECT {_COLUMNS} FROM messages_by_user WHERE channel = ? AND user_login = ? "
                f"AND bucket = ? {window}"
            ),
            "user_rows_desc": prepare(
                f"SELECT {_COLUMNS} FROM messages_by_user WHERE channel = ? AND user_login = ? "
                f"AND bucket = ? {window} ORDER BY sent_at DESC, message_id DESC"
            ),
            "user_probe": prepare(
                "SELECT bucket FROM messages_by_user WHERE channel = ? AND user_login = ? AND bucket IN ? "
                "PER PARTITION LIMIT 1"
            ),
            "channel_from": prepare(
                f"SELECT {_COLUMNS} FROM messages_by_channel WHERE channel = ? AND bucket = ? "
                "AND sent_at >= ? LIMIT 1"
            ),
            "channel_before": prepare(
                f"SELECT {_COLUMNS} FROM messages_by_channel WHERE channel = ? AND bucket = ? "
                "AND sent_at < ? ORDER BY sent_at DESC, message_id DESC LIMIT 1"
            ),
            "user_bucket": prepare(
                f"SELECT {_COLUMNS} FROM messages_by_user WHERE channel = ? AND user_login = ? AND bucket = ?"
            ),
            "user_count": prepare(
                "SELECT COUNT(*) AS n, MAX(user_id) AS user_id FROM messages_by_user WHERE channel = ? "
                f"AND user_login = ? AND bucket IN ? {window}"
            ),
            "senders": prepare(
                "SELECT user_login, user_id FROM messages_by_channel WHERE channel = ? AND bucket = ? "
                f"{window}"
            ),
            "ping": prepare("SELECT release_version FROM system.local"),
        }
        for statement in self._stmts.values():
            statement.fetch_size = fetch_size

    def _query(self, name: str, *params: Any) -> PagedQuery:
        return PagedQuery(self.session, self._stmts[name], params)

    async def ping(self) -> None:
        await self._query("ping").all()

    # -- channels ------------------------------------------------------------------------------------------

    async def channels(self) -> list[Channel]:
        async with self._channels_lock:
            cached = self._channels
            if cached is not None and time.monotonic() - cached[0] < self.channels_ttl_s:
                return cached[1]
            logins = sorted([row.channel async for row in self._query("distinct").rows()])
            gate = asyncio.Semaphore(_CONCURRENT_LOOKUPS)

            async def with_id(login: str) -> Channel:
                async with gate:
                    return Channel(login, await self._channel_id(login))

            found = list(await asyncio.gather(*(with_id(login) for login in logins)))
            self._channels = (time.monotonic(), found)
            return found

    async def _channel_id(self, channel: str) -> str | None:
        latest = await self._query("latest", channel).all()
        if not latest:
            return None
        rows = await self._query("channel_id", channel, latest[0].bucket).all()
        return rows[0].channel_id if rows else None

    async def channel_by_id(self, channel_id: str) -> str | None:
        for channel in await self.channels():
            if channel.channel_id == channel_id:
                return channel.login
        return None

    async def user_by_id(self, channel: str, user_id: str) -> str | None:
        raise LookupUnsupported("lookups by user id arrive with the id-keyed tables; use /user/<login>")

    # -- days and months -----------------------------------------------------------------------------------

    async def _bucket_starts(self, channel: str, lo: int, hi: int, *, reverse: bool) -> AsyncIterator[int]:
        name = "buckets_desc" if reverse else "buckets"
        async for row in self._query(name, channel, bucket_of(max(lo, 0)), hi).rows():
            yield _ms(row.bucket)

    async def channel_days(self, channel: str) -> list[date]:
        days: list[date] = []
        async for start in self._bucket_starts(channel, 0, _FAR, reverse=True):
            day = _day(start)
            if not days or days[-1] != day:
                days.append(day)
        return days

    async def latest_day(self, channel: str) -> date | None:
        rows = await self._query("latest", channel).all()
        return _day(_ms(rows[0].bucket)) if rows else None

    async def user_months(self, channel: str, user: str) -> list[tuple[int, int]]:
        by_month: dict[tuple[int, int], list[int]] = {}
        async for start in self._bucket_starts(channel, 0, _FAR, reverse=True):
            day = _day(start)
            by_month.setdefault((day.year, day.month), []).append(start)
        gate = asyncio.Semaphore(_CONCURRENT_LOOKUPS)

        async def has_any(starts: list[int]) -> bool:
            for i in range(0, len(starts), self.probe_batch):
                async with gate:
                    if await self._probe(channel, user, starts[i : i + self.probe_batch]):
                        return True
            return False

        months = list(by_month)
        found = await asyncio.gather(*(has_any(by_month[m]) for m in months))
        return [month for month, hit in zip(months, found, strict=True) if hit]

    async def latest_user_month(self, channel: str, user: str) -> tuple[int, int] | None:
        async for batch in _batches(self._bucket_starts(channel, 0, _FAR, reverse=True), self.probe_batch):
            hits = await self._probe(channel, user, batch)
            if hits:
                day = _day(max(hits))
                return day.year, day.month
        return None

    async def _probe(self, channel: str, user: str, starts: list[int]) -> set[int]:
        """Which of the buckets ``starts`` hold something of ``user``."""
        rows = await self._query("user_probe", channel, user, starts).all()
        return {_ms(row.bucket) for row in rows}

    # -- events --------------------------------------------------------------------------------------------

    def _stream(self, queries: AsyncIterator[PagedQuery]) -> AsyncIterator[ChatEvent]:
        return self._rows(queries, row_event)

    async def _rows(
        self, queries: AsyncIterator[PagedQuery], convert: Callable[[Any], T]
    ) -> AsyncIterator[T]:
        """The rows of ``queries`` in order, the next :attr:`read_ahead` of them already started."""
        ahead: deque[PagedQuery] = deque()
        source = aiter(queries)
        exhausted = False

        async def fill() -> None:
            nonlocal exhausted
            while not exhausted and len(ahead) < self.read_ahead:
                nxt = await anext(source, None)
                if nxt is None:
                    exhausted = True
                else:
                    ahead.append(nxt)

        await fill()
        while ahead:
            query = ahead.popleft()
            await fill()
            async for page in query.pages():
                for row in page:
                    yield convert(row)

    def channel_events(
        self, channel: str, lo: int, hi: int, *, reverse: bool = False
    ) -> AsyncIterator[ChatEvent]:
        rows = "channel_rows_desc" if reverse else "channel_rows"

        async def queries() -> AsyncIterator[PagedQuery]:
            async for start in self._bucket_starts(channel, lo, hi, reverse=reverse):
                yield self._query(rows, channel, _dt(start), _dt(lo), _dt(hi))

        return self._stream(queries())

    def user_events(
        self, channel: str, user: str, lo: int, hi: int, *, reverse: bool = False
    ) -> AsyncIterator[ChatEvent]:
        rows = "user_rows_desc" if reverse else "user_rows"

        async def queries() -> AsyncIterator[PagedQuery]:
            async for batch in _batches(
                self._bucket_starts(channel, lo, hi, reverse=reverse), self.probe_batch
            ):
                hits = await self._probe(channel, user, batch)
                for start in batch:
                    if start in hits:
                        yield self._query(rows, channel, user, _dt(start), _dt(lo), _dt(hi))

        return self._stream(queries())

    def senders(self, channel: str, lo: int, hi: int) -> AsyncIterator[tuple[str | None, str | None]]:
        async def queries() -> AsyncIterator[PagedQuery]:
            async for start in self._bucket_starts(channel, lo, hi, reverse=False):
                yield self._query("senders", channel, _dt(start), _dt(lo), _dt(hi))

        return self._rows(queries(), lambda row: (row.user_login, row.user_id))

    # -- counts and random picks ---------------------------------------------------------------------------

    async def user_count(self, channel: str, user: str, lo: int, hi: int) -> tuple[int, str | None]:
        gate = asyncio.Semaphore(_CONCURRENT_LOOKUPS)

        async def count(batch: list[int]) -> tuple[int, str | None]:
            async with gate:
                starts = [_dt(start) for start in batch]
                rows = await self._query("user_count", channel, user, starts, _dt(lo), _dt(hi)).all()
            return (rows[0].n, rows[0].user_id) if rows else (0, None)

        batches = [
            b async for b in _batches(self._bucket_starts(channel, lo, hi, reverse=False), self.probe_batch)
        ]
        counts = await asyncio.gather(*(count(batch) for batch in batches))
        ids = [user_id for _, user_id in counts if user_id]
        return sum(n for n, _ in counts), (max(ids) if ids else None)

    async def random_channel_event(self, channel: str) -> ChatEvent | None:
        starts = [start async for start in self._bucket_starts(channel, 0, _FAR, reverse=False)]
        for _ in range(min(_RANDOM_TRIES, len(starts))):
            start = random.choice(starts)
            at = _dt(start + random.randrange(BUCKET_MS))
            for name in ("channel_from", "channel_before"):
                rows = await self._query(name, channel, _dt(start), at).all()
                if rows:
                    return row_event(rows[0])
        return None

    async def random_user_event(self, channel: str, user: str) -> ChatEvent | None:
        starts = [start async for start in self._bucket_starts(channel, 0, _FAR, reverse=False)]
        random.shuffle(starts)
        for i in range(0, len(starts), self.probe_batch):
            hits = sorted(await self._probe(channel, user, starts[i : i + self.probe_batch]))
            if hits:
                rows = await self._query("user_bucket", channel, user, _dt(random.choice(hits))).all()
                if rows:
                    return row_event(random.choice(rows))
        return None


_FAR: Final = 253_402_300_799_999


def _dt(ms: int) -> datetime:
    """A naive UTC datetime (what the driver binds as a ``timestamp``) for epoch ms, clamped to its range."""
    return _EPOCH + _MS_DELTA * min(max(ms, 0), _FAR)


async def _batches(items: AsyncIterator[int], size: int) -> AsyncIterator[list[int]]:
    batch: list[int] = []
    async for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
