""":class:`~serve.store.protocol.LogStore` over the id-keyed tables (layout E64s, docs/storage.md).

* **Names to keys.** A channel login is read under the Twitch id it had last (``channel_ids_by_login``,
  the id with the newest ``last_seen``) and under ``login:<l>`` for that login and every login of that id
  (``channel_names``: lines without ids, plain IRC or old imports, are keyed by login); a channel id under
  the id and its logins' ``login:`` keys. Users the same way (``user_ids_by_login``, ``user_names``), so
  ``oldname``, ``newname`` and the id give one history. Lookups are cached :attr:`names_ttl_s`.
* **A channel's events.** Each key's buckets from ``chat_buckets`` (the index, one row per active bucket),
  merged in time order. Oldest first, a run of buckets that one key alone has (the usual case: the
  channel's id) is one ``bucket IN ?`` query of up to :attr:`bucket_batch` buckets, answered in time
  order, paged (checked as the rows arrive); newest first (paging forbids ``ORDER BY`` with ``IN``), or
  where several keys have a bucket (an id and a login), one query per bucket and key, the keys' rows
  merged by ``(sent_at, message_id)`` in Cassandra's order (:func:`schemas.cql.clustering_order`). The
  next :attr:`read_ahead` queries' first pages are requested while one is streamed
  (:mod:`serve.store.aiocql`: awaited, no thread per request): a quiet day of 288 buckets is 12 queries,
  not 288. Every row becomes a :class:`serve.store.row.LogLine` (restored and parsed on demand).
* **A user's events.** ``chat_by_user`` holds each of a user's events with its line, one partition per
  channel key, user key and half UTC day (``period``). In time order: one ``period IN ?`` query per
  (channel key, user key) over at most :attr:`probe_batch` periods of the range (Cassandra answers an
  ``IN`` on the last partition-key column in the sorted order of its values, each partition in clustering
  order, paged: time order, checked as the rows arrive), the keys' rows merged. Newest first (paging
  forbids ``ORDER BY`` with ``IN``): the periods that hold anything, found with ``period IN ? PER PARTITION
  LIMIT 1`` probes, read one by one in descending order, the next one started ahead.
* **Channels**: ``SELECT DISTINCT channel_key FROM chat_buckets``, an id key named by its newest login
  (``channel_names``), a ``login:`` key by the newest login of the id that login had last (else by the
  login itself), merged into one :class:`~serve.store.protocol.Channel` per login; cached
  :attr:`channels_ttl_s`.
* **Counts**: a user's by Cassandra (``COUNT(*)`` over :attr:`probe_batch` pointer partitions per query);
  by sender over a channel range, the stored lines scanned for their sender
  (:func:`core.irc_parse.sender_of`).
* **Random picks**: every line about equally likely (:mod:`serve.store.random_pick`): the channel's
  buckets (a user's half-days that hold anything) are counted, up to a sample of them, one is picked in
  proportion to its lines and a line of it by position.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
import uuid
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Final, TypeVar

from cassandra.cluster import EXEC_PROFILE_DEFAULT
from cassandra.query import tuple_factory

from core.irc_parse import USER_KINDS, sender_of
from core.logins import login_of
from core.times import epoch_ms, naive_utc, utc_day
from core.user_months import has_column, has_flag, needs_login_index, needs_migration
from schemas.chat_event import MAX_ID_CHARS, MAX_LOGIN_CHARS, ChatEvent
from schemas.cql import (
    BUCKET_MS,
    bucket_of,
    channel_key,
    clustering_order,
    half_days_of,
    key_id,
    month_end_ms,
    month_of,
    month_periods,
    month_start_ms,
    user_key,
)
from schemas.packed_month import Frame, UnpackedRow, unpack_frame
from schemas.stored_line import unmarked
from serve.store import random_pick
from serve.store.aiocql import PagedQuery
from serve.store.login_keys import LoginKeys
from serve.store.names import NameSeen, user_names
from serve.store.protocol import ById, Channel, Named
from serve.store.row import LogLine, aclose, stored_event

ROW_COLUMNS: Final = (
    "toUnixTimestamp(sent_at) AS sent_ms, CAST(message_id AS text) AS mid, line, "
    "toUnixTimestamp(received_at) AS received_ms"
)
"""A stored event's columns, the key's values as the reader uses them: epoch ms and the uuid's text. Made
by Cassandra, they cost the driver ~5 µs less per row than a ``timestamp`` (a datetime) and a ``uuid``
(a UUID object, then its text for the line): a channel-day read is mostly this per-row cost. The rows come
as plain tuples (another ~1 µs less than a named tuple each), indexed by the four names below."""
_SENT, _MID, _LINE, _RECEIVED, _SPILLED, _PACKED = range(6)
_TUPLE_ROWS: Final = frozenset(
    (
        "rows", "rows_desc", "rows_in", "user_rows", "user_rows_desc", "user_month", "user_month_desc",
        "whole_month", "whole_month_desc",
    )
)  # fmt: skip
"""The statements that select :data:`ROW_COLUMNS`."""
_FAR: Final = 253_402_300_799_999
_CONCURRENT_LOOKUPS: Final = 16
_CACHE_MAX: Final = 10_000
_MISS_TTL_S: Final = 5.0
"""How long a channel key found empty, or its latest bucket, stays so (a new channel, or a new day of one,
shows within it)."""
_LONG_RANGE_MS: Final = 400 * 86_400_000
"""A user's range longer than this (their whole life in a channel) ends at the channel's latest bucket."""
log = logging.getLogger(__name__)
T = TypeVar("T")
U = TypeVar("U")
Order = tuple[int, int, int, int]


FIRST_PAGE: Final = 500
"""Rows of the first page of a channel's stream by default; each next query group's pages are twice as
big, up to the store's ``fetch_size`` (:meth:`CassandraStore._ramp`)."""


def _picked(event: ChatEvent) -> bool:
    """What ``/random`` returns: something a user said (:data:`core.irc_parse.USER_KINDS`), never a
    deletion, a ban or a notice."""
    return event.kind in USER_KINDS


def _dt(ms: int) -> datetime:
    """A naive UTC datetime (what the driver binds as a ``timestamp``) for epoch ms, clamped to its range."""
    return naive_utc(min(max(ms, 0), _FAR))


def _row_order(reverse: bool) -> Callable[[Any], Order]:
    if reverse:
        return lambda row: _negated(clustering_order(row[_SENT], uuid.UUID(row[_MID])))
    return lambda row: clustering_order(row[_SENT], uuid.UUID(row[_MID]))


def _negated(key: Order) -> Order:
    return -key[0], -key[1], -key[2], -key[3]


async def _merge(
    sources: Sequence[AsyncIterator[T]], key: Callable[[T], Any]
) -> AsyncIterator[tuple[int, T]]:
    """``(index of its source, item)`` of every item of ``sources`` (each sorted by ``key``), in ``key``
    order; ties in source order."""
    try:
        if len(sources) == 1:
            async for item in sources[0]:
                yield 0, item
            return
        heap: list[tuple[Any, int, T]] = []
        for i, source in enumerate(sources):  # their first pages are in flight already
            first = await anext(source, None)
            if first is not None:
                heap.append((key(first), i, first))
        heapq.heapify(heap)
        while len(heap) > 1:
            _, i, item = heap[0]
            yield i, item
            nxt = await anext(sources[i], None)
            if nxt is None:
                heapq.heappop(heap)
            else:
                heapq.heapreplace(heap, (key(nxt), i, nxt))
        if heap:  # the last source left: the rest of it in its own order, no key to compute
            _, i, item = heap[0]
            yield i, item
            async for item in sources[i]:
                yield i, item
    finally:
        for source in sources:
            await aclose(source)


def _newest(rows: Iterable[Any], value: Callable[[Any], str]) -> list[str]:
    """The distinct values of name-history ``rows``, the most recently seen first."""
    ranked = sorted(
        rows,
        key=lambda r: (
            epoch_ms(r.last_seen) if r.last_seen is not None else -1,
            epoch_ms(r.first_seen) if r.first_seen is not None else -1,
            value(r),
        ),
        reverse=True,
    )
    return list(dict.fromkeys(value(r) for r in ranked))


def _year_month(period: int) -> tuple[int, int]:
    """(year, month) of the month a user period lies in."""
    moment = time.gmtime(month_start_ms(month_of(period)) // 1000)
    return moment.tm_year, moment.tm_mon


async def _distinct(rows: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """``rows`` (sorted) without a row whose time and id repeat the one before it (a spilled user-month's
    row written into both its month and its half day by a replay)."""
    last: Any = None
    try:
        async for row in rows:
            key = (row[_SENT], row[_MID])
            if key != last:
                last = key
                yield row
    finally:
        await aclose(rows)


async def _rows_of(runs: AsyncIterator[Sequence[T]]) -> AsyncIterator[T]:
    """The items of ``runs``, one by one."""
    try:
        async for run in runs:
            for item in run:
                yield item
    finally:
        await aclose(runs)


async def _items(items: Sequence[T]) -> AsyncIterator[T]:
    for item in items:
        yield item


async def _pages(first: Sequence[T], pages: AsyncIterator[Sequence[T]]) -> AsyncIterator[Sequence[T]]:
    """``first`` (if not empty), then the pages of ``pages``."""
    try:
        if first:
            yield first
        async for page in pages:
            yield page
    finally:
        await aclose(pages)


async def _second(pairs: AsyncIterator[tuple[int, T]]) -> AsyncIterator[T]:
    """The items of :func:`_merge`'s pairs."""
    try:
        async for _, item in pairs:
            yield item
    finally:
        await aclose(pairs)


async def _runs(items: AsyncIterator[T], size: int = 1000) -> AsyncIterator[list[T]]:
    """``items`` in runs of up to ``size``."""
    run: list[T] = []
    try:
        async for item in items:
            run.append(item)
            if len(run) >= size:
                yield run
                run = []
        if run:
            yield run
    finally:
        await aclose(items)


def _as_unpacked(row: Any) -> UnpackedRow:
    """A Cassandra row (:data:`ROW_COLUMNS` first) in the shape of a frame's rows, without a chat: a late row
    of a packed month, read with the frame's."""
    return row[_SENT], row[_MID], row[_LINE] or "", row[_RECEIVED], None, False


async def _all_unpacked(rows: AsyncIterator[Any]) -> AsyncIterator[UnpackedRow]:
    try:
        async for row in rows:
            yield _as_unpacked(row)
    finally:
        await aclose(rows)


async def _frame_rows(runs: AsyncIterator[Run]) -> AsyncIterator[UnpackedRow]:
    """The rows of ``runs``, one by one, each in a frame's rows' shape."""
    try:
        async for framed, run in runs:
            if framed is True:
                for row in run:
                    yield row
            elif framed is False:
                for row in run:
                    yield _as_unpacked(row)
            else:
                for row in framed.rows(run):
                    yield row
    finally:
        await aclose(runs)


Run = tuple[bool | Frame, Sequence[Any]]
"""Rows of one user-month in a run: a packed month's :class:`~schemas.packed_month.Frame` and the indices of
its rows read (a range); else whether they are a frame's rows (:data:`schemas.packed_month.UnpackedRow`, a
chat at index 4, which is not :data:`_SPILLED`) and those (else :data:`ROW_COLUMNS` rows)."""


def _owner(pair: Pair) -> tuple[str, str] | None:
    """``(channel id, user id)`` of a pair of id keys (every row under it is theirs: the sink keys a row by
    its event's); None where either is a login key."""
    channel_id, user_id = key_id(pair[0]), key_id(pair[1])
    return None if channel_id is None or user_id is None else (channel_id, user_id)


class OutOfOrder(RuntimeError):
    """Cassandra answered a ``period IN ?`` query out of time order (the reader relies on that order)."""


@dataclass(frozen=True, slots=True)
class Keys:
    """What a channel or user name is read under."""

    keys: tuple[str, ...]
    """The partition keys (``channel_key`` / ``user_key`` values): the id first, then ``login:`` keys."""
    name: str
    """What to call it: the login asked for, or the id's newest login (else the id)."""
    id: str | None
    """The Twitch id read (None: none is known)."""


Pair = tuple[str, str]
"""(channel key, user key) of a user's pointer partitions in a channel."""


class CassandraStore:
    """The logs of one keyspace, read through a connected cassandra-driver ``session``."""

    def __init__(
        self,
        session: Any,
        *,
        fetch_size: int = 5000,
        read_ahead: int = 2,
        first_page: int = FIRST_PAGE,
        probe_batch: int = 200,
        bucket_batch: int = 24,
        channels_ttl_s: float = 60.0,
        names_ttl_s: float | None = None,
        unmarked: bool | None = None,
        logins_indexed: bool | None = None,
    ) -> None:
        self.session = session
        if logins_indexed is None:
            logins_indexed = bool(session.keyspace) and not needs_login_index(session, session.keyspace)
        self.login_keys = LoginKeys(
            session,
            indexed=logins_indexed,
            ttl_s=channels_ttl_s,
            current_ttl_s=min(channels_ttl_s, _MISS_TTL_S),
        )
        """Which ``login:`` user keys have rows in a channel's months: a user's read skips the others."""
        flag = "spilled"
        if unmarked is None:
            unmarked = bool(session.keyspace) and needs_migration(session, session.keyspace)
            if unmarked and not has_flag(session, session.keyspace):
                flag = "(boolean)true AS spilled"  # every month may have half days
        statics = f"{flag}, packed, packed_rows"
        if not (bool(session.keyspace) and has_column(session, session.keyspace, "packed")):
            statics = f"{flag}, (blob)null AS packed, (int)null AS packed_rows"  # not `chatlog init`ed yet
        self.unmarked = unmarked
        """The keyspace's half-day partitions may be unmarked (``chatlog init`` has not migrated it to month
        partitions, :mod:`core.user_months`): every month without a month partition reads its half days too,
        as slowly as the half-day layout did (serve logs a warning)."""
        if unmarked:
            log.warning(
                "keyspace %s holds half-day user partitions not marked for month reads: `chatlog init` "
                "migrates it (user-months read slowly until then)",
                session.keyspace,
            )
        self.fetch_size = fetch_size
        self.first_page = max(first_page, 1)
        self.read_ahead = max(read_ahead, 0)
        self.probe_batch = max(probe_batch, 1)
        self.bucket_batch = max(bucket_batch, 1)
        self.channels_ttl_s = channels_ttl_s
        self.names_ttl_s = channels_ttl_s if names_ttl_s is None else names_ttl_s
        self._channels: tuple[float, list[Channel]] | None = None
        self._channels_lock = asyncio.Lock()
        self._names: dict[tuple[str, str], tuple[float, list[str]]] = {}
        self._ends: dict[tuple[str, str], tuple[float, int | None]] = {}
        prepare = session.prepare
        window = "AND sent_at >= ? AND sent_at < ?"
        desc = "ORDER BY sent_at DESC, message_id DESC"
        rows = f"SELECT {ROW_COLUMNS} FROM chat_by_channel WHERE channel_key = ? AND bucket = ?"
        user_pk = "channel_key = ? AND user_key = ?"
        user_rows = f"SELECT {ROW_COLUMNS} FROM chat_by_user WHERE {user_pk}"
        user_month = f"SELECT {ROW_COLUMNS}, {statics} FROM chat_by_user WHERE {user_pk}"
        self._stmts: dict[str, Any] = {
            "distinct": prepare("SELECT DISTINCT channel_key FROM chat_buckets"),
            "buckets": prepare(
                "SELECT bucket FROM chat_buckets WHERE channel_key = ? AND bucket >= ? AND bucket < ?"
            ),
            "buckets_desc": prepare(
                "SELECT bucket FROM chat_buckets WHERE channel_key = ? AND bucket >= ? AND bucket < ? "
                "ORDER BY bucket DESC"
            ),
            "first": prepare("SELECT bucket FROM chat_buckets WHERE channel_key = ? LIMIT 1"),
            "latest": prepare(
                "SELECT bucket FROM chat_buckets WHERE channel_key = ? ORDER BY bucket DESC LIMIT 1"
            ),
            "rows": prepare(f"{rows} {window}"),
            "rows_desc": prepare(f"{rows} {window} {desc}"),
            "rows_in": prepare(
                f"SELECT {ROW_COLUMNS} FROM chat_by_channel WHERE channel_key = ? AND bucket IN ? {window}"
            ),
            "bucket_count": prepare(
                "SELECT COUNT(*) AS n FROM chat_by_channel WHERE channel_key = ? AND bucket = ?"
            ),
            "senders": prepare(
                f"SELECT line FROM chat_by_channel WHERE channel_key = ? AND bucket IN ? {window}"
            ),
            "user_rows": prepare(f"{user_rows} AND period IN ? {window}"),
            "user_rows_desc": prepare(f"{user_rows} AND period = ? {window} {desc}"),
            "user_month": prepare(f"{user_month} AND period = ? {window}"),
            "user_month_desc": prepare(f"{user_month} AND period = ? {window} {desc}"),
            "whole_month": prepare(f"{user_month} AND period = ?"),
            "whole_month_desc": prepare(f"{user_month} AND period = ? {desc}"),
            "spilled": prepare(
                f"SELECT {statics} FROM chat_by_user WHERE channel_key = ? AND user_key = ? AND period = ? "
                "LIMIT 1"
            ),
            "probe": prepare(
                f"SELECT period, {statics}, toUnixTimestamp(sent_at) AS sent_ms FROM chat_by_user "
                "WHERE channel_key = ? AND user_key = ? AND period IN ? PER PARTITION LIMIT 1"
            ),
            "count": prepare(
                "SELECT COUNT(*) AS n FROM chat_by_user WHERE channel_key = ? AND user_key = ? "
                f"AND period IN ? {window}"
            ),
            "channel_ids": prepare(
                "SELECT channel_id, first_seen, last_seen FROM channel_ids_by_login WHERE channel = ?"
            ),
            "channel_names": prepare(
                "SELECT channel, first_seen, last_seen FROM channel_names WHERE channel_id = ?"
            ),
            "user_ids": prepare(
                "SELECT user_id, first_seen, last_seen FROM user_ids_by_login WHERE user_login = ?"
            ),
            "user_names": prepare(
                "SELECT user_login, first_seen, last_seen FROM user_names WHERE user_id = ?"
            ),
            "ping": prepare("SELECT release_version FROM system.local"),
        }
        for statement in self._stmts.values():
            statement.fetch_size = fetch_size
        self._tuples = session.execution_profile_clone_update(EXEC_PROFILE_DEFAULT, row_factory=tuple_factory)

    def _query(self, name: str, *params: Any, fetch_size: int | None = None) -> PagedQuery:
        """Statement ``name`` started with ``params``; pages of ``fetch_size`` rows if given, else of
        :attr:`fetch_size`."""
        profile = self._tuples if name in _TUPLE_ROWS else EXEC_PROFILE_DEFAULT
        statement = self._stmts[name]
        if fetch_size is None or fetch_size == statement.fetch_size:
            return PagedQuery(self.session, statement, params, profile)
        bound = statement.bind(params)
        bound.fetch_size = fetch_size
        return PagedQuery(self.session, bound, (), profile)

    def _ramp(self, unit: int) -> int:
        """Rows per page of the ``unit``-th query group of a stream (0: the first): :attr:`first_page`,
        twice as many for each next one, up to :attr:`fetch_size`. Big pages read a busy day fastest
        (fewer paging round trips), small first ones keep ``?limit=1`` cheap."""
        return min(self.fetch_size, self.first_page << min(unit, 24))

    async def ping(self) -> None:
        await self._query("ping").all()

    # -- names -------------------------------------------------------------------------------------------

    async def _lookup(self, kind: str, key: str) -> list[str]:
        """The values of one name-history partition (``channel_ids``, ``channel_names``, ``user_ids``,
        ``user_names``), most recently seen first; cached :attr:`names_ttl_s`."""
        now = time.monotonic()
        hit = self._names.get((kind, key))
        if hit is not None and now - hit[0] < self.names_ttl_s:
            return hit[1]
        column = {"channel_ids": "channel_id", "channel_names": "channel", "user_ids": "user_id"}.get(
            kind, "user_login"
        )
        found = _newest(await self._query(kind, key).all(), lambda r: str(getattr(r, column)))
        if len(self._names) >= _CACHE_MAX:
            self._names.clear()
        self._names[(kind, key)] = (now, found)
        return found

    async def _keys(self, who: Named, *, channel: bool) -> Keys:
        ids, names = ("channel_ids", "channel_names") if channel else ("user_ids", "user_names")

        def id_key(value: str) -> str:
            key = channel_key(value, "") if channel else user_key(value, None)
            assert key is not None  # a non-empty id always has a key
            return key

        def login_key(login: str) -> str:
            key = channel_key(None, login) if channel else user_key(None, login)
            assert key is not None  # a non-empty login always has a key
            return key

        if isinstance(who, ById):
            given = who.id.strip()
            if not given or len(given) > MAX_ID_CHARS:  # no such id is stored: nothing to look up or cache
                return Keys((), who.name, None)
            logins = await self._lookup(names, given)
            return Keys(tuple(dict.fromkeys([id_key(given), *map(login_key, logins)])), who.name, given)
        login = login_of(who)
        if not login or len(login) > MAX_LOGIN_CHARS:
            return Keys((), login, None)
        found = await self._lookup(ids, login)
        the_id = found[0] if found else None
        logins = await self._lookup(names, the_id) if the_id else []
        keys = ([id_key(the_id)] if the_id else []) + [login_key(x) for x in [*logins, login]]
        return Keys(tuple(dict.fromkeys(keys)), login, the_id)

    async def channel_keys(self, channel: Named) -> Keys:
        """The ``channel_key`` values ``channel`` is read under."""
        return await self._keys(channel, channel=True)

    async def user_keys(self, user: Named) -> Keys:
        """The ``user_key`` values ``user`` is read under."""
        return await self._keys(user, channel=False)

    async def channel_id(self, channel: Named) -> str | None:
        return (await self.channel_keys(channel)).id

    async def user_id(self, user: Named) -> str | None:
        return (await self.user_keys(user)).id

    async def user_name_history(self, user_id: str) -> list[NameSeen]:
        return await user_names(self.session, user_id)

    async def channel_by_id(self, channel_id: str) -> str | None:
        the_id = channel_id.strip()
        if not the_id or len(the_id) > MAX_ID_CHARS:
            return None
        logins = await self._lookup("channel_names", the_id)
        if logins:
            return logins[0]
        latest = await self._query("latest", channel_key(the_id, "")).all()
        return the_id if latest else None  # stored, but its name was not written (yet)

    async def user_by_id(self, channel: Named, user_id: str) -> str | None:
        the_id = user_id.strip()
        logins = await self._lookup("user_names", the_id) if 0 < len(the_id) <= MAX_ID_CHARS else []
        return logins[0] if logins else None

    # -- channels ----------------------------------------------------------------------------------------

    async def channels(self) -> list[Channel]:
        async with self._channels_lock:
            cached = self._channels
            if cached is not None and time.monotonic() - cached[0] < self.channels_ttl_s:
                return cached[1]
            keys = sorted([row.channel_key async for row in self._query("distinct").rows()])
            gate = asyncio.Semaphore(_CONCURRENT_LOOKUPS)

            async def named(key: str) -> tuple[str, str | None]:
                async with gate:
                    if key.startswith("login:"):  # lines without ids: the channel its login names now
                        login = key[len("login:") :]
                        ids = await self._lookup("channel_ids", login)
                        if not ids:
                            return login, None
                        the_id = ids[0]
                    else:
                        the_id = key[len("id:") :] if key.startswith("id:") else key
                        login = the_id
                    logins = await self._lookup("channel_names", the_id)
                return (logins[0] if logins else login), the_id

            ids: dict[str, list[str]] = {}
            for login, the_id in await asyncio.gather(*(named(key) for key in keys)):
                ids.setdefault(login, [])
                if the_id is not None:
                    ids[login].append(the_id)

            async def channel(login: str, found: list[str]) -> Channel:
                if len(found) > 1:  # a login freed by a rename and taken by another id: the one it has now
                    async with gate:
                        now = await self._lookup("channel_ids", login)
                    found = [i for i in now if i in found] or found
                return Channel(login, found[0] if found else None)

            found = list(await asyncio.gather(*(channel(login, ids[login]) for login in sorted(ids))))
            self._channels = (time.monotonic(), found)
            return found

    # -- buckets, days and months --------------------------------------------------------------------------

    async def _bucket_starts(self, key: str, lo: int, hi: int, *, reverse: bool) -> AsyncIterator[int]:
        name = "buckets_desc" if reverse else "buckets"
        async for row in self._query(name, key, _dt(bucket_of(max(lo, 0))), _dt(hi)).rows():
            yield epoch_ms(row.bucket)

    async def _bucket_groups(
        self, keys: Sequence[str], lo: int, hi: int, *, reverse: bool
    ) -> AsyncIterator[tuple[int, list[str]]]:
        """Each bucket start that any of ``keys`` has in the range, in order, with the keys that have it."""
        if lo >= hi or not keys:
            return
        sources = [self._bucket_starts(key, lo, hi, reverse=reverse) for key in keys]
        start: int | None = None
        having: list[str] = []
        async for i, at in _merge(sources, (lambda s: -s) if reverse else (lambda s: s)):
            if at != start:
                if having and start is not None:
                    yield start, having
                start, having = at, []
            having.append(keys[i])
        if having and start is not None:
            yield start, having

    async def _span(self, keys: Sequence[str]) -> tuple[int, int] | None:
        """From the first bucket of any of ``keys`` to the end of the latest one (None: nothing stored)."""

        async def ends(key: str) -> tuple[list[Any], list[Any]]:
            first, latest = self._query("first", key), self._query("latest", key)
            return await first.all(), await latest.all()

        firsts, latests = [], []
        for first, latest in await asyncio.gather(*(ends(key) for key in keys)):
            firsts += [epoch_ms(row.bucket) for row in first]
            latests += [epoch_ms(row.bucket) for row in latest]
        if not firsts:
            return None
        return min(firsts), max(latests) + BUCKET_MS

    async def channel_days(self, channel: Named) -> list[date]:
        keys = await self.channel_keys(channel)
        days: list[date] = []
        async for start, _ in self._bucket_groups(keys.keys, 0, _FAR, reverse=True):
            day = utc_day(start)
            if not days or days[-1] != day:
                days.append(day)
        return days

    async def latest_day(self, channel: Named) -> date | None:
        keys = await self.channel_keys(channel)
        found = await asyncio.gather(*(self._end_bucket("latest", key) for key in keys.keys))
        starts = [start for start in found if start is not None]
        return utc_day(max(starts)) if starts else None

    async def _end_bucket(self, end: str, key: str) -> int | None:
        """The ``first`` or ``latest`` bucket of a channel key (None: nothing stored under it), cached: a
        first one :attr:`names_ttl_s` (it does not change), a latest one and a miss at most
        :data:`_MISS_TTL_S` (every log route asks whether its channel is logged: one query per channel key
        and request without this)."""
        now = time.monotonic()
        hit = self._ends.get((end, key))
        if hit is not None and now < hit[0]:
            return hit[1]
        rows = await self._query(end, key).all()
        found = epoch_ms(rows[0].bucket) if rows else None
        if len(self._ends) >= _CACHE_MAX:
            self._ends.clear()
        ttl = self.names_ttl_s if found is not None and end == "first" else min(self.names_ttl_s, _MISS_TTL_S)
        self._ends[(end, key)] = (now + ttl, found)
        return found

    async def _user_span(
        self, channel: Named, user: Named, lo: int = 0, hi: int = _FAR
    ) -> tuple[Keys, Keys, list[Pair], int, int]:
        """The channel's and user's keys, the (channel key, user key) pairs of the channel keys that hold
        anything, and the part of ``[lo, hi)`` from the channel's first bucket on (to its latest one when
        the range is longer than :data:`_LONG_RANGE_MS`: a channel's whole life)."""
        channel_keys = await self.channel_keys(channel)
        firsts = await asyncio.gather(*(self._end_bucket("first", key) for key in channel_keys.keys))
        found = zip(channel_keys.keys, firsts, strict=True)
        having = {key: first for key, first in found if first is not None}
        if not having:
            return channel_keys, await self.user_keys(user), [], lo, lo
        start, end = max(lo, min(having.values())), hi
        if end - start > _LONG_RANGE_MS:
            span = await self._span(list(having))
            end = hi if span is None else min(hi, span[1])
        user_keys = await self._user_keys_in(user, list(having), start, end)
        if not user_keys.keys:
            return channel_keys, user_keys, [], lo, lo
        pairs = [(c, u) for c in having for u in user_keys.keys]
        pairs = await self.login_keys.kept(pairs, start, end)  # no login key without rows in the range
        return channel_keys, user_keys, pairs, start, end

    async def _user_keys_in(self, user: Named, channel_keys: Sequence[str], lo: int, hi: int) -> Keys:
        """:meth:`user_keys` of a read of ``channel_keys`` in ``[lo, hi)``; a user named by id without a
        lookup of the id's logins where the login-key index has no ``login:`` key with rows there (nothing
        is read under those keys then: one query less for most users of a channel without deletions)."""
        if isinstance(user, ById) and await self.login_keys.none_in(channel_keys, lo, hi):
            given = user.id.strip()
            if given and len(given) <= MAX_ID_CHARS:
                key = user_key(given, None)
                assert key is not None  # a non-empty id always has a key
                return Keys((key,), user.name, given)
        return await self.user_keys(user)

    async def _probe_rows(self, pairs: Sequence[Pair], periods: Sequence[int]) -> list[tuple[Pair, Any]]:
        """Each pair's first row (``period``, ``spilled``, ``packed_rows``, ``sent_ms``) of each of
        ``periods`` that holds anything (a month partition holding only its statics, its ``spilled`` flag
        or its frame: ``sent_ms`` None)."""
        gate = asyncio.Semaphore(_CONCURRENT_LOOKUPS)

        async def probe(pair: Pair, batch: Sequence[int]) -> list[tuple[Pair, Any]]:
            async with gate:
                rows = await self._query("probe", *pair, list(batch)).all()
            return [(pair, row) for row in rows]

        batches = [periods[i : i + self.probe_batch] for i in range(0, len(periods), self.probe_batch)]
        found = await asyncio.gather(*(probe(p, b) for p in pairs for b in batches))
        return [hit for hits in found for hit in hits]

    async def _probe(self, pairs: Sequence[Pair], periods: Sequence[int]) -> dict[int, list[Pair]]:
        """Which of ``periods`` hold a row of each pair: period -> the pairs (in ``pairs`` order)."""
        found: dict[int, list[Pair]] = {}
        for pair, row in await self._probe_rows(pairs, periods):
            if row.sent_ms is not None or row.packed_rows:
                found.setdefault(row.period, []).append(pair)
        return found

    async def _partitions(
        self, pairs: Sequence[Pair], lo: int, hi: int
    ) -> tuple[dict[int, list[Pair]], set[tuple[Pair, int]]]:
        """Every user partition of ``pairs`` holding rows in the months of ``[lo, hi)``: the month
        partitions, and the half days of the months whose month partition is ``spilled`` (a bot's month,
        or a month of the half-day layout marked by its migration: a month without a month partition has
        no half day either); period -> the pairs. Besides, the (pair, month)s read from both a month
        partition and half days (where a row may be in both), or from a packed month (whose frame is not
        counted by ``COUNT(*)``)."""
        months = month_periods(lo, hi)
        found: dict[int, list[Pair]] = {}
        spilled: dict[int, list[Pair]] = {}
        with_rows: set[tuple[Pair, int]] = set()
        mixed: set[tuple[Pair, int]] = set()
        for pair, row in await self._probe_rows(pairs, months):
            if row.sent_ms is not None or row.packed_rows:
                found.setdefault(row.period, []).append(pair)
                with_rows.add((pair, row.period))
            if row.packed_rows:
                mixed.add((pair, row.period))
            if self._half_days(row.spilled):
                spilled.setdefault(row.period, []).append(pair)
        if self.unmarked:  # not migrated: a month without a month partition may have half days too
            spilled = {month: list(pairs) for month in months}
        rest = sorted((m, missing) for m, missing in spilled.items() if missing)
        probed = await asyncio.gather(*(self._probe(missing, half_days_of(m, lo, hi)) for m, missing in rest))
        for (month, _), hits in zip(rest, probed, strict=True):
            for period, having in hits.items():
                found.setdefault(period, []).extend(having)
                mixed.update((pair, month) for pair in having if (pair, month) in with_rows)
        return found, mixed

    async def user_months(self, channel: Named, user: Named) -> list[tuple[int, int]]:
        _, _, pairs, start, end = await self._user_span(channel, user)
        found, _ = await self._partitions(pairs, start, end)
        return sorted({_year_month(p) for p in found}, reverse=True)

    async def latest_user_month(self, channel: Named, user: Named) -> tuple[int, int] | None:
        _, _, pairs, start, end = await self._user_span(channel, user)
        months = month_periods(start, end)
        probed = await self._probe_rows(pairs, months)
        with_rows = {row.period for _, row in probed if row.sent_ms is not None or row.packed_rows}
        flagged = set(months) if self.unmarked else {row.period for _, row in probed if row.spilled}
        pending: list[int] = []  # half days of newer spilled months without month rows, newest first

        async def newest_of_pending() -> tuple[int, int] | None:
            hits = await self._probe(pairs, pending) if pending else {}
            pending.clear()
            return _year_month(max(hits)) if hits else None

        for month in reversed(months):
            if month in with_rows:
                return await newest_of_pending() or _year_month(month)
            if month in flagged:
                pending.extend(reversed(half_days_of(month, start, end)))
            if len(pending) >= self.probe_batch and (found := await newest_of_pending()):
                return found
        return await newest_of_pending()

    # -- events --------------------------------------------------------------------------------------------

    @staticmethod
    def _line(row: Any, hint: str) -> LogLine:
        return LogLine(row[_LINE] or "", row[_MID], row[_SENT], row[_RECEIVED], hint)

    @staticmethod
    def _event(row: Any, hint: str) -> ChatEvent:
        return stored_event(row[_LINE] or "", row[_MID], row[_SENT], row[_RECEIVED], hint)

    async def _ahead(self, units: AsyncIterator[U]) -> AsyncGenerator[U, None]:
        """The units of ``units`` in order, the next ones made (so their queries started) while one is
        used: one at first, twice as many after each unit used, up to :attr:`read_ahead`. So a reader that
        stops early (``?limit=1`` on a busy day, a client gone) has started two queries, not
        ``read_ahead + 1`` (each up to a page of rows that Cassandra reads and sends all the same)."""
        ahead: deque[U] = deque()
        exhausted = False
        depth = min(1, self.read_ahead)
        try:

            async def fill() -> None:
                nonlocal exhausted
                while not exhausted and len(ahead) < depth + 1:
                    nxt = await anext(units, None)
                    if nxt is None:
                        exhausted = True
                    else:
                        ahead.append(nxt)

            while True:
                await fill()
                if not ahead:
                    return
                yield ahead.popleft()  # while it is used, the next `depth` are under way
                depth = min(2 * depth, self.read_ahead)
        finally:
            await aclose(units)

    def channel_lines(
        self, channel: Named, lo: int, hi: int, *, reverse: bool = False
    ) -> AsyncIterator[LogLine]:
        return self._channel_lines(channel, lo, hi, reverse)

    async def _channel_lines(self, channel: Named, lo: int, hi: int, reverse: bool) -> AsyncIterator[LogLine]:
        keys = await self.channel_keys(channel)
        window = (_dt(lo), _dt(hi))

        made = 0  # query groups made so far: their pages grow (:meth:`_ramp`)

        def group(*runs: tuple[str, list[int]]) -> list[PagedQuery]:
            """The queries of one unit: per (key, bucket starts), one query."""
            nonlocal made
            page = self._ramp(made)
            made += 1
            return [
                self._query("rows_in", key, [_dt(s) for s in starts], *window, fetch_size=page)
                if len(starts) > 1
                else self._query(
                    "rows_desc" if reverse else "rows", key, _dt(starts[0]), *window, fetch_size=page
                )
                for key, starts in runs
            ]

        async def units() -> AsyncIterator[list[PagedQuery]]:
            """A bucket's query per key that has it; oldest first, runs of buckets only one key has in
            one ``bucket IN ?`` query (:attr:`bucket_batch` at most; Cassandra pages IN queries only in
            ascending order)."""
            run: list[int] = []
            run_key = ""
            async for start, having in self._bucket_groups(keys.keys, lo, hi, reverse=reverse):
                if run and (having != [run_key] or len(run) >= self.bucket_batch):
                    yield group((run_key, run))
                    run = []
                if len(having) == 1 and not reverse:
                    run.append(start)
                    run_key = having[0]
                else:
                    yield group(*((key, [start]) for key in having))
            if run:
                yield group((run_key, run))

        order = _row_order(reverse)
        ahead = self._ahead(units())
        try:
            async for queries in ahead:
                if len(queries) == 1:
                    last: Any = None
                    async for page in queries[0].pages():
                        for row in page:
                            if last is not None and row[_SENT] < last and not reverse:
                                raise OutOfOrder(f"chat_by_channel {keys.name}: {row[_SENT]} after {last}")
                            last = row[_SENT]
                            yield self._line(row, keys.name)
                else:  # one bucket under several keys (an id and a login): merged
                    async for _, row in _merge([q.rows() for q in queries], order):
                        yield self._line(row, keys.name)
        finally:
            await ahead.aclose()

    def user_lines(
        self, channel: Named, user: Named, lo: int, hi: int, *, reverse: bool = False
    ) -> AsyncIterator[LogLine]:
        return self._user_lines(channel, user, lo, hi, reverse)

    async def _ascending(self, pair: Pair, periods: Sequence[int], lo: int, hi: int) -> AsyncIterator[Any]:
        """The rows of one (channel key, user key) in ``[lo, hi)``, oldest first: ``period IN ?`` queries
        over :attr:`probe_batch` periods each, the next one started with the current one."""
        batches = [periods[i : i + self.probe_batch] for i in range(0, len(periods), self.probe_batch)]
        window = (_dt(lo), _dt(hi))

        def start(i: int) -> PagedQuery | None:
            return self._query("user_rows", *pair, list(batches[i]), *window) if i < len(batches) else None

        nxt = start(0)
        last: Any = None
        for i in range(len(batches)):
            current, nxt = nxt, start(i + 1)
            assert current is not None
            async for page in current.pages():
                for row in page:
                    if last is not None and row[_SENT] < last:
                        raise OutOfOrder(f"chat_by_user {pair}: {row[_SENT]} after {last}")
                    last = row[_SENT]
                    yield row

    async def _descending(self, hits: dict[int, list[Pair]], lo: int, hi: int) -> AsyncIterator[Any]:
        """The rows of the partitions ``hits`` names in ``[lo, hi)``, newest first: period by period, the
        keys of one period merged, the next period's queries started while one is read."""
        periods = sorted(hits, reverse=True)
        order = _row_order(True)

        def start(period: int) -> list[PagedQuery]:
            return [self._query("user_rows_desc", c, u, period, _dt(lo), _dt(hi)) for c, u in hits[period]]

        nxt = start(periods[0]) if periods else []
        for i in range(len(periods)):
            current = nxt
            nxt = start(periods[i + 1]) if i + 1 < len(periods) else []
            async for _, row in _merge([q.rows() for q in current], order):
                yield row

    def _half_days(self, spilled: bool | None) -> bool:
        """Whether a month whose partition's flag is ``spilled`` (None: no such partition) has half days to
        read: where the flag is set, or anywhere in a keyspace not migrated yet (a migrated keyspace has
        no half day in a month without a flagged month partition)."""
        return bool(spilled) or self.unmarked

    async def _statics(self, pair: Pair, month: int) -> tuple[bool | None, bytes | None]:
        """The month partition's ``spilled`` flag (None when there is no such partition) and ``packed``
        frame."""
        rows = await self._query("spilled", *pair, month).all()
        return (bool(rows[0].spilled), rows[0].packed) if rows else (None, None)

    def _month_query(self, pair: Pair, month: int, lo: int, hi: int, reverse: bool) -> PagedQuery:
        """The query of one (channel key, user key)'s month partition within ``[lo, hi)``, started: a whole
        month without clustering bounds, so a partition holding only its flag answers it (sent_ms None)."""
        if lo <= month_start_ms(month) and month_end_ms(month) <= hi:
            return self._query("whole_month_desc" if reverse else "whole_month", *pair, month)
        window = (_dt(lo), _dt(hi))
        return self._query("user_month_desc" if reverse else "user_month", *pair, month, *window)

    async def _pair_month(
        self, pair: Pair, month: int, lo: int, hi: int, reverse: bool, query: PagedQuery
    ) -> AsyncIterator[Run]:
        """The rows of one (channel key, user key) in month ``month`` within ``[lo, hi)``, in time order
        (newest first if ``reverse``), in runs (a page of rows: no generator step per row): its month
        partition alone unless it is spilled (one query, the usual case); else merged with the month's half
        days (a bot's month, or a month of the half-day layout, marked by its migration), an id read twice
        dropped. A packed month (``chatlog pack``, :mod:`schemas.packed_month`) is its frame's rows, as one
        run, merged with any row written after it was packed: then every run is a frame's (:data:`Run`), the
        late rows in its rows' shape (without a chat)."""
        whole = lo <= month_start_ms(month) and month_end_ms(month) <= hi
        pages = query.pages()
        try:
            first = await anext(pages, None) or []
            spilled: bool | None
            packed: bytes | None = None
            if whole:
                spilled = bool(first and first[0][_SPILLED])
                packed = first[0][_PACKED] if first else None
                if first and first[0][_SENT] is None:  # the partition holds its statics alone
                    first = []
            elif first:
                spilled, packed = bool(first[0][_SPILLED]), first[0][_PACKED]
            else:
                spilled, packed = await self._statics(pair, month)
            if packed is not None and not first and not self._half_days(spilled):
                # a packed month without late rows: the usual read of a past month
                frame = unpack_frame(packed)
                window = frame.window(lo, hi, reverse)
                if window:
                    yield frame, window
                return
            unpacked = None
            if packed is not None:
                frame = unpack_frame(packed)
                unpacked = frame.rows(frame.window(lo, hi, reverse))
            framed = unpacked is not None
            if unpacked is not None:  # late rows too: merged, a row in both once
                late = _all_unpacked(_rows_of(_pages(first, pages)))
                merged = _merge([_items(unpacked), late], _row_order(reverse))
                pages, first = _runs(_distinct(_second(merged))), []
            if not self._half_days(spilled):
                if first:
                    yield False, first
                async for page in pages:
                    yield framed, page
                return
            half_days = half_days_of(month, lo, hi)
            halves: AsyncIterator[Any]
            if reverse:
                halves = self._descending(await self._probe([pair], half_days[::-1]), lo, hi)
            else:
                halves = self._ascending(pair, half_days, lo, hi)
            if not first and unpacked is None:
                async for row in halves:
                    yield False, (row,)
                return
            if framed:
                halves = _all_unpacked(halves)

            async def month_rows() -> AsyncIterator[Any]:
                for row in first:
                    yield row
                async for page in pages:
                    for row in page:
                        yield row

            merged = (row async for _, row in _merge([month_rows(), halves], _row_order(reverse)))
            async for row in _distinct(merged):
                yield framed, (row,)
        finally:
            await aclose(pages)

    async def _user_lines(
        self, channel: Named, user: Named, lo: int, hi: int, reverse: bool
    ) -> AsyncIterator[LogLine]:
        if lo >= hi:
            return
        channel_keys, _, pairs, start, end = await self._user_span(channel, user, lo, hi)
        if not pairs or start >= end:
            return
        months = month_periods(start, end)
        for month in reversed(months) if reverse else months:
            queries = [self._month_query(pair, month, start, end, reverse) for pair in pairs]  # all at once
            sources = [
                self._pair_month(pair, month, start, end, reverse, query)
                for pair, query in zip(pairs, queries, strict=True)
            ]
            name = channel_keys.name
            if len(sources) == 1:
                runs = sources[0]
                owner = _owner(pairs[0])
                try:
                    async for framed, run in runs:
                        if isinstance(framed, Frame):  # a packed month's: its id and line read when asked
                            sents, chats, actions = framed.sents, framed.chats, framed.actions
                            for i in run:
                                yield LogLine(
                                    "", "", sents[i], None, name, chats[i], actions[i], owner, framed, i
                                )
                        elif framed:  # a frame's rows with late ones: each with its chat
                            for sent, mid, line, received, chat, action in run:
                                yield LogLine(line, mid, sent, received, name, chat, action, owner)
                        else:
                            for row in run:  # _line() inlined: this runs once per row served
                                yield LogLine(
                                    row[_LINE] or "",
                                    row[_MID],
                                    row[_SENT],
                                    row[_RECEIVED],
                                    name,
                                    None,
                                    False,
                                    owner,
                                )
                finally:
                    await aclose(runs)
                continue
            # an event is in one user key's rows (its sender's, else its target's): no id repeats across keys
            rows = _merge([_frame_rows(source) for source in sources], _row_order(reverse))
            try:
                async for _, (sent, mid, line, received, chat, action) in rows:
                    yield LogLine(line, mid, sent, received, name, chat, action)
            finally:
                await aclose(rows)

    def senders(self, channel: Named, lo: int, hi: int) -> AsyncIterator[tuple[str | None, str | None]]:
        return self._senders(channel, lo, hi)

    async def _senders(
        self, channel: Named, lo: int, hi: int
    ) -> AsyncIterator[tuple[str | None, str | None]]:
        keys = await self.channel_keys(channel)
        window = (_dt(lo), _dt(hi))

        async def buckets() -> AsyncIterator[list[PagedQuery]]:
            """Each key's buckets in ``bucket IN ?`` runs of :attr:`bucket_batch` (a count needs no order)."""
            runs: dict[str, list[datetime]] = {}
            async for start, having in self._bucket_groups(keys.keys, lo, hi, reverse=False):
                for key in having:
                    run = runs.setdefault(key, [])
                    run.append(_dt(start))
                    if len(run) >= self.bucket_batch:
                        yield [self._query("senders", key, run, *window)]
                        runs[key] = []
            yield [self._query("senders", key, run, *window) for key, run in runs.items() if run]

        units = self._ahead(buckets())
        try:
            async for queries in units:
                for query in queries:
                    async for page in query.pages():
                        for row in page:
                            yield sender_of(unmarked(row.line or ""))
        finally:
            await units.aclose()

    # -- counts and random picks ---------------------------------------------------------------------------

    async def user_count(self, channel: Named, user: Named, lo: int, hi: int) -> tuple[int, str | None]:
        _, user_keys, pairs, start, end = await self._user_span(channel, user, lo, hi)
        gate = asyncio.Semaphore(_CONCURRENT_LOOKUPS)

        async def count(pair: Pair, batch: Sequence[int]) -> int:
            async with gate:
                rows = await self._query("count", *pair, list(batch), _dt(start), _dt(end)).all()
            return int(rows[0].n) if rows else 0

        found, mixed = await self._partitions(pairs, start, end) if start < end else ({}, set())
        by_pair: dict[Pair, list[int]] = {}
        for period, having in found.items():
            for pair in having:
                if (pair, month_of(period)) not in mixed:
                    by_pair.setdefault(pair, []).append(period)

        async def distinct(pair: Pair, month: int) -> int:
            """A month read from its partition and its half days: rows counted once (a row may be in both)."""
            query = self._month_query(pair, month, start, end, False)
            return sum([len(run) async for _, run in self._pair_month(pair, month, start, end, False, query)])

        batches = [
            (pair, periods[i : i + self.probe_batch])
            for pair, periods in by_pair.items()
            for i in range(0, len(periods), self.probe_batch)
        ]
        counts = await asyncio.gather(
            *(count(p, b) for p, b in batches), *(distinct(p, m) for p, m in sorted(mixed))
        )
        return sum(counts), user_keys.id

    async def random_channel_event(self, channel: Named) -> ChatEvent | None:
        keys = await self.channel_keys(channel)
        buckets = [
            (key, start)
            for key in keys.keys
            async for start in self._bucket_starts(key, 0, _FAR, reverse=False)
        ]

        async def count(bucket: tuple[str, int]) -> int:
            rows = await self._query("bucket_count", bucket[0], _dt(bucket[1])).all()
            return int(rows[0].n) if rows else 0

        async def nth(bucket: tuple[str, int], index: int) -> ChatEvent | None:
            return await self._nth("rows", (bucket[0], _dt(bucket[1]), _dt(0), _dt(_FAR)), index, keys.name)

        return await random_pick.pick(buckets, count, nth, _picked)

    async def random_user_event(self, channel: Named, user: Named) -> ChatEvent | None:
        channel_keys, _, pairs, start, end = await self._user_span(channel, user)
        partitions, mixed = await self._partitions(pairs, start, end) if start < end else ({}, set())
        hits = [(pair, period) for period, found in partitions.items() for pair in found]
        read: dict[tuple[Pair, int], list[Any]] = {}  # a packed (or mixed) month: its rows, read once

        async def month_rows(hit: tuple[Pair, int]) -> list[Any]:
            if hit not in read:
                pair, month = hit
                query = self._month_query(pair, month, 0, _FAR, False)
                read[hit] = [
                    row async for row in _frame_rows(self._pair_month(pair, month, 0, _FAR, False, query))
                ]
            return read[hit]

        async def count(hit: tuple[Pair, int]) -> int:
            if hit in mixed:
                return len(await month_rows(hit))
            (key, who), period = hit
            rows = await self._query("count", key, who, [period], _dt(0), _dt(_FAR)).all()
            return int(rows[0].n) if rows else 0

        async def nth(hit: tuple[Pair, int], index: int) -> ChatEvent | None:
            if hit in mixed:
                rows = await month_rows(hit)
                return self._event(rows[index], channel_keys.name) if 0 <= index < len(rows) else None
            (key, who), period = hit
            params = (key, who, [period], _dt(0), _dt(_FAR))
            return await self._nth("user_rows", params, index, channel_keys.name)

        return await random_pick.pick(hits, count, nth, _picked)

    async def _nth(self, name: str, params: tuple[Any, ...], index: int, hint: str) -> ChatEvent | None:
        """The ``index``-th row (0-based, clustering order) of statement ``name``'s answer, as an event."""
        rows = self._query(name, *params).rows()
        try:
            async for row in rows:
                if index == 0:
                    return self._event(row, hint)
                index -= 1
        finally:
            await aclose(rows)
        return None
