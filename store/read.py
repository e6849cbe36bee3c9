""":class:`~store.protocol.LogStore` over the blocks (docs/storage.md): what ``chatlog serve`` and ``chatlog
logs`` read.

* **Names to keys.** A channel login is read under the Twitch id it had last (``channel_ids_by_login``, the
  id with the newest ``last_seen``) and under ``login:<l>`` for that login and every login of that id
  (``channel_names``: lines without ids are keyed by login); a channel id under the id and its logins'
  ``login:`` keys. Users the same way (``user_ids_by_login``, ``user_names``), so ``oldname``, ``newname``
  and the id give one history. Lookups are cached :attr:`LogReader.names_ttl_s`.
* **Where the blocks are.** A channel key's days and their parts are rows of ``channel_days`` (one query
  per key and read); a user's months and parts, of ``user_months`` per (channel key, user key). A forward
  read of one month does not wait for them to start scanning part 0 of that month of each key pair.
* **A range's lines.** Period by period (a day of the channel, a month of the user), oldest first (newest
  first when reversed), the blocks of every part and key of the period are scanned in order of their
  first lines (paged; the next period's scan started ahead) and merged (:class:`store.merge.Merge`): each
  line once, in :func:`store.keys.line_order`. A block whose lines all lie before the range is not sent
  (``last_at >= ?``, filtered by Cassandra within the partition). Reversed, the blocks' first and last
  times are read first (no frame), so that a block reaching further back than the next ones in the scan is
  waited for. The lines are handed on in runs (:data:`store.line.Run`): a stretch of one block as a
  :class:`store.line.Span` of its frame, merged lines of overlapping blocks as a list. Every line is a
  :class:`store.line.LogLine` of its block's frame: its id and stored line are read from the frame only
  when asked (a text answer of chat messages never asks, nor makes the line object:
  :meth:`~store.line.Span.columns`).
* **Channels**: ``SELECT DISTINCT channel_key FROM channel_days``, an id key named by its newest login, a
  ``login:`` key by the newest login of the id that login had last (else by the login itself); cached
  :attr:`LogReader.channels_ttl_s`.
* **Counts** by the lines' ids (a user's), or by the stored lines' senders (a channel's); **random picks**
  per block, in proportion to their lines (:mod:`store.random_pick`).
"""

from __future__ import annotations

import asyncio
import bisect
import functools
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Final

from cassandra.cluster import EXEC_PROFILE_DEFAULT
from cassandra.query import tuple_factory

from core.irc_parse import USER_KINDS, sender_of
from core.logins import login_of
from core.times import naive_utc, utc_day
from schemas.chat_event import MAX_ID_CHARS, MAX_LOGIN_CHARS, ChatEvent
from store import random_pick
from store.aiocql import PagedQuery
from store.blocks import CHANNEL_SPAN_MS
from store.frame import Frame, decode
from store.keys import (
    DAY_MS,
    LOGIN_KEY_PREFIX,
    channel_key,
    key_id,
    login_key,
    month_end_ms,
    month_of,
    month_start_ms,
    user_key,
    uuid_text,
)
from store.line import LogLine, Run, Span, aclose, closing, each_line, frame_line, stored_event
from store.merge import Merge
from store.names import NameSeen, user_names
from store.protocol import ById, Channel, Named
from store.stored_line import unmarked

_FAR: Final = 253_402_300_799_999
_CONCURRENT_LOOKUPS: Final = 16
_CACHE_MAX: Final = 10_000
_MISS_TTL_S: Final = 5.0
"""How long an index read (a key's days, a user's months) stays cached: a new day or month shows within it."""
_BLOCK_COLUMNS: Final = "toUnixTimestamp(first_at) AS first_ms, toUnixTimestamp(last_at) AS last_ms"
_FIRST, _LAST, _FRAME, _PARTS = range(4)

Pair = tuple[str, str]
"""(channel key, user key)."""
Partition = tuple[Any, ...]
"""A block table's partition key: ``(channel_key, day, part)`` or ``(channel_key, user_key, month, part)``."""


@dataclass(frozen=True, slots=True)
class Keys:
    """What a channel or user name is read under."""

    keys: tuple[str, ...]
    """The keys: the id first, then ``login:`` keys."""
    name: str
    """What to call it: the login asked for, or the id's newest login (else the id)."""
    id: str | None
    """The Twitch id read (None: none is known)."""


def _newest(rows: Sequence[Any], value: Callable[[Any], str]) -> list[str]:
    """The values of name-history rows, most recently seen first (a row without a time last)."""

    def order(row: Any) -> tuple[float, float]:
        last = row.last_seen.timestamp() if row.last_seen is not None else float("-inf")
        first = row.first_seen.timestamp() if row.first_seen is not None else float("-inf")
        return last, first

    return list(dict.fromkeys(value(r) for r in sorted(rows, key=order, reverse=True)))


def _picked(event: ChatEvent) -> bool:
    """What a random pick returns: something a user said (never a deletion or a ban)."""
    return event.kind in USER_KINDS


def _owner(channel_key_: str, frame: Frame) -> Any:
    """What a block's lines need for the opt-out rule without a parse: its channel id (None for a login key)
    and its lines' filed-under users (:class:`BlockOwner`)."""
    return BlockOwner(key_id(channel_key_) if not channel_key_.startswith("login:") else None, frame.whos)


class BlockOwner:
    """A block's channel id and per-line user keys: a line's ``(channel id, user id)`` where both are ids."""

    __slots__ = ("channel_id", "whos")

    def __init__(self, channel_id: str | None, whos: list[str | None] | None) -> None:
        self.channel_id, self.whos = channel_id, whos

    def of(self, index: int) -> tuple[str, str] | None:
        whos = self.whos
        if self.channel_id is None or whos is None:
            return None
        who = whos[index]
        if who is None or who.startswith("login:"):
            return None
        user_id = key_id(who)
        return None if user_id is None else (self.channel_id, user_id)


async def _in_order(
    scans: Sequence[tuple[Partition, PagedQuery]], *, newest_first: bool
) -> AsyncIterator[tuple[Any, Partition, list[Any]]]:
    """The block rows of several partitions' scans in order of their first lines (descending with
    ``newest_first``): each with its partition and the first lines of the rows still to come (one a scan)."""
    heads = [(p, query.rows()) for p, query in scans]
    sign = -1 if newest_first else 1
    try:
        firsts = await asyncio.gather(*(anext(rows, None) for _, rows in heads))
        live = [(row, p, rows) for row, (p, rows) in zip(firsts, heads, strict=True) if row is not None]
        while live:
            live.sort(key=lambda item: sign * item[0][_FIRST])
            row, partition, rows = live[0]
            nxt = await anext(rows, None)
            if nxt is None:
                live.pop(0)
            else:
                live[0] = (nxt, partition, rows)
            yield row, partition, [item[0][_FIRST] for item in live]
    finally:
        for _, rows in heads:
            await aclose(rows)


def _id_pair(channel: Named, user: Named) -> Pair | None:
    """The (channel key, user key) of a channel and a user both named by id (what a user's lines under
    their ids are filed under); None when either is named by login (its id is looked up) or is no id."""
    if not (isinstance(channel, ById) and isinstance(user, ById)):
        return None
    channel_id, user_id = channel.id.strip(), user.id.strip()
    if not (0 < len(channel_id) <= MAX_ID_CHARS and 0 < len(user_id) <= MAX_ID_CHARS):
        return None
    user_id_key = user_key(user_id, None)
    return None if user_id_key is None else (channel_key(channel_id, ""), user_id_key)


class LogReader:
    """The logs of one keyspace, read through a connected cassandra-driver ``session`` (its keyspace set)."""

    def __init__(
        self,
        session: Any,
        *,
        fetch_size: int = 200,
        channels_ttl_s: float = 60.0,
        names_ttl_s: float | None = None,
    ) -> None:
        self.session = session
        self.fetch_size = fetch_size
        """Blocks per page of a scan (a block is a micro-batch's lines of a partition: up to thousands)."""
        self.channels_ttl_s = channels_ttl_s
        self.names_ttl_s = channels_ttl_s if names_ttl_s is None else names_ttl_s
        self._channels: tuple[float, list[Channel]] | None = None
        self._channels_lock = asyncio.Lock()
        self._names: dict[tuple[str, str], tuple[float, list[str]]] = {}
        self._index: dict[tuple[str, Any], tuple[float, list[Any]]] = {}
        self._loading: dict[tuple[str, Any], asyncio.Future[list[Any]]] = {}
        prepare = session.prepare
        # a channel's blocks of a range start in its first hour or later (CHANNEL_SPAN_MS): sliced from there
        cb = "FROM channel_blocks WHERE channel_key = ? AND day = ? AND part = ? AND first_at >= ?"
        ub = "FROM user_blocks WHERE channel_key = ? AND user_key = ? AND month = ? AND part = ?"
        window = "AND first_at < ? AND last_at >= ?"
        desc = "ORDER BY first_at DESC"
        filtering = "ALLOW FILTERING"  # last_at, in one partition: blocks before the range are not sent
        self._stmts: dict[str, Any] = {
            "distinct": prepare("SELECT DISTINCT channel_key FROM channel_days"),
            "days": prepare("SELECT day, part FROM channel_days WHERE channel_key = ?"),
            "latest_day": prepare("SELECT day FROM channel_days WHERE channel_key = ? LIMIT 1"),
            "months": prepare("SELECT month, part FROM user_months WHERE channel_key = ? AND user_key = ?"),
            "login_users": prepare(  # does any user of the channel key have lines without an id?
                "SELECT user_key FROM channel_users WHERE channel_key = ? AND user_key >= ? AND user_key < ? "
                "LIMIT 1"
            ),
            "channel": prepare(f"SELECT {_BLOCK_COLUMNS}, frame {cb} {window} {filtering}"),
            "channel_desc": prepare(f"SELECT {_BLOCK_COLUMNS}, frame {cb} {window} {desc} {filtering}"),
            "channel_meta": prepare(f"SELECT {_BLOCK_COLUMNS}, lines {cb} {window} {desc} {filtering}"),
            "channel_count": prepare(
                f"SELECT {_BLOCK_COLUMNS}, lines FROM channel_blocks WHERE channel_key = ? AND day = ? "
                "AND part = ?"
            ),
            "channel_at": prepare(
                f"SELECT {_BLOCK_COLUMNS}, frame FROM channel_blocks WHERE channel_key = ? AND day = ? "
                "AND part = ? AND first_at = ?"
            ),
            "user": prepare(f"SELECT {_BLOCK_COLUMNS}, frame, parts {ub} {window} {filtering}"),
            "user_desc": prepare(f"SELECT {_BLOCK_COLUMNS}, frame {ub} {window} {desc} {filtering}"),
            "user_meta": prepare(f"SELECT {_BLOCK_COLUMNS}, lines {ub} {window} {desc} {filtering}"),
            "user_count": prepare(f"SELECT {_BLOCK_COLUMNS}, lines {ub}"),
            "user_at": prepare(f"SELECT {_BLOCK_COLUMNS}, frame {ub} AND first_at = ?"),
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
        for name, statement in self._stmts.items():
            statement.fetch_size = (
                fetch_size if name in ("channel", "channel_desc", "user", "user_desc") else 5000
            )
        self._tuples = session.execution_profile_clone_update(EXEC_PROFILE_DEFAULT, row_factory=tuple_factory)

    def _query(self, name: str, *params: Any, tuples: bool = False) -> PagedQuery:
        return PagedQuery(
            self.session, self._stmts[name], params, self._tuples if tuples else EXEC_PROFILE_DEFAULT
        )

    async def ping(self) -> None:
        await self._query("ping").all()

    # -- names -------------------------------------------------------------------------------------------

    async def _lookup(self, kind: str, key: str) -> list[str]:
        """The values of one name-history partition, most recently seen first; cached."""
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

    async def _keys(self, who: Named, *, channel: bool, logins: bool = True) -> Keys:
        """The keys ``who``'s lines may be filed under: its id's, and (``logins``) those of every login its
        id has had, looked up."""
        ids, names = ("channel_ids", "channel_names") if channel else ("user_ids", "user_names")

        def id_key(value: str) -> str:
            key = channel_key(value, "") if channel else user_key(value, None)
            assert key is not None  # a non-empty id always has a key
            return key

        if isinstance(who, ById):
            given = who.id.strip()
            if not given or len(given) > MAX_ID_CHARS:
                return Keys((), who.name, None)
            had = await self._lookup(names, given) if logins else []
            return Keys(tuple(dict.fromkeys([id_key(given), *map(login_key, had)])), who.name, given)
        login = login_of(who)
        if not login or len(login) > MAX_LOGIN_CHARS:
            return Keys((), login, None)
        found = await self._lookup(ids, login)
        the_id = found[0] if found else None
        had = await self._lookup(names, the_id) if the_id and logins else []
        keys = ([id_key(the_id)] if the_id else []) + [login_key(x) for x in [*had, login]]
        return Keys(tuple(dict.fromkeys(keys)), login, the_id)

    async def channel_keys(self, channel: Named) -> Keys:
        return await self._keys(channel, channel=True)

    async def user_keys(self, user: Named) -> Keys:
        return await self._keys(user, channel=False)

    async def channel_id(self, channel: Named) -> str | None:
        return (await self._keys(channel, channel=True, logins=False)).id  # an id has no login to look up

    async def user_id(self, user: Named) -> str | None:
        return (await self._keys(user, channel=False, logins=False)).id

    async def user_name_history(self, user_id: str) -> list[NameSeen]:
        return await user_names(self.session, user_id)

    async def channel_by_id(self, channel_id: str) -> str | None:
        the_id = channel_id.strip()
        if not the_id or len(the_id) > MAX_ID_CHARS:
            return None
        logins = await self._lookup("channel_names", the_id)
        if logins:
            return logins[0]
        latest = await self._query("latest_day", channel_key(the_id, "")).all()
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

    # -- where the blocks are --------------------------------------------------------------------------------

    async def _indexed(self, name: str, *params: Any) -> list[tuple[int, int]]:
        """The ``(period, part)`` rows of an index partition (``days`` or ``months``), newest first; cached
        :data:`_MISS_TTL_S`."""
        hit = self._hit((name, params))
        return hit if hit is not None else await asyncio.shield(self._index_read(name, *params))

    def _index_read(self, name: str, *params: Any) -> asyncio.Future[list[Any]]:
        """:meth:`_indexed`'s read of an index partition not cached, started now unless under way."""

        async def load() -> list[Any]:
            rows = await self._query(name, *params, tuples=True).all()
            return [(int(row[0]), int(row[1])) for row in rows]

        return self._cached_read((name, params), load)

    async def _cached(self, key: tuple[str, Any], load: Callable[[], Awaitable[list[Any]]]) -> list[Any]:
        """``load()``'s rows, kept :data:`_MISS_TTL_S` under ``key``; one load at a time per key (a second
        asker awaits the first one's)."""
        hit = self._hit(key)
        return hit if hit is not None else await asyncio.shield(self._cached_read(key, load))

    def _hit(self, key: tuple[str, Any]) -> list[Any] | None:
        """The rows cached under ``key`` within :data:`_MISS_TTL_S`, else None."""
        hit = self._index.get(key)
        return hit[1] if hit is not None and time.monotonic() - hit[0] < _MISS_TTL_S else None

    def _cached_read(
        self, key: tuple[str, Any], load: Callable[[], Awaitable[list[Any]]]
    ) -> asyncio.Future[list[Any]]:
        """The load of ``key`` (not cached): the one under way, else ``load()`` started now."""
        pending = self._loading.get(key)
        if pending is None:
            pending = asyncio.ensure_future(load())
            self._loading[key] = pending
            pending.add_done_callback(functools.partial(self._loaded, key))
        return pending

    def _loaded(self, key: tuple[str, Any], load: asyncio.Future[list[Any]]) -> None:
        """A load of ``key`` ended: its rows cached, unless it failed (every asker gets the error)."""
        self._loading.pop(key, None)
        if load.cancelled() or load.exception() is not None:
            return
        if len(self._index) >= _CACHE_MAX:
            self._index.clear()
        self._index[key] = (time.monotonic(), load.result())

    async def _channel_periods(self, keys: Sequence[str]) -> dict[int, list[Partition]]:
        """Every day of the channel keys that holds blocks -> its partitions."""
        found: dict[int, list[Partition]] = {}
        for key, rows in zip(
            keys, await asyncio.gather(*(self._indexed("days", k) for k in keys)), strict=True
        ):
            for day, part in rows:
                found.setdefault(day, []).append((key, day, part))
        return found

    async def _user_periods(self, pairs: Sequence[Pair]) -> dict[int, list[Partition]]:
        """Every month of the (channel key, user key) pairs that holds blocks -> its partitions."""
        found: dict[int, list[Partition]] = {}
        reads = await asyncio.gather(*(self._indexed("months", *pair) for pair in pairs))
        for pair, rows in zip(pairs, reads, strict=True):
            for month, part in rows:
                found.setdefault(month, []).append((*pair, month, part))
        return found

    async def channel_days(self, channel: Named) -> list[date]:
        keys = await self.channel_keys(channel)
        days = await self._channel_periods(keys.keys)
        return [utc_day(day * DAY_MS) for day in sorted(days, reverse=True)]

    async def latest_day(self, channel: Named) -> date | None:
        keys = await self.channel_keys(channel)
        days = await self._channel_periods(keys.keys)  # cached: every log route asks this first
        return utc_day(max(days) * DAY_MS) if days else None

    async def _pairs(self, channel: Named, user: Named) -> tuple[Keys, Keys, list[Pair]]:
        """The channel and user keys, and the (channel key, user key) pairs that may hold the user's months:
        a channel key with no day holds no user's month, and a user's ``login:`` key only matters under a
        channel key where some user has lines without an id (plain IRC, old imports). Both answers are
        cached per channel key (:data:`_MISS_TTL_S`): a user's month of Twitch lines reads one or two index
        partitions, not one per key pair. The logins a user's id has had are looked up only where such a
        channel key is found (a channel of Twitch lines has none: a user's month by ids asks no name)."""
        channel_keys = await self.channel_keys(channel)
        with_days = [c for c in channel_keys.keys if await self._indexed("days", c)]
        with_logins = {c for c in with_days if await self._has_login_users(c)}
        user_keys = await self._keys(user, channel=False, logins=bool(with_logins))
        by_id = [u for u in user_keys.keys if not u.startswith(LOGIN_KEY_PREFIX)]
        logins = [u for u in user_keys.keys if u.startswith(LOGIN_KEY_PREFIX)]
        pairs: list[Pair] = []
        for c in with_days:
            pairs += [(c, u) for u in by_id]
            if c in with_logins:
                pairs += [(c, u) for u in logins]
        return channel_keys, user_keys, pairs

    async def _has_login_users(self, channel_key_: str) -> bool:
        """Whether a user of ``channel_key_`` has lines under a ``login:`` key; cached :data:`_MISS_TTL_S`."""
        bound = LOGIN_KEY_PREFIX[:-1] + chr(ord(LOGIN_KEY_PREFIX[-1]) + 1)  # every key starting with it

        async def load() -> list[Any]:
            return await self._query("login_users", channel_key_, LOGIN_KEY_PREFIX, bound, tuples=True).all()

        return bool(await self._cached(("login_users", (channel_key_,)), load))

    async def user_months(self, channel: Named, user: Named) -> list[tuple[int, int]]:
        _, _, pairs = await self._pairs(channel, user)
        months = await self._user_periods(pairs)
        return [(m // 100, m % 100) for m in sorted(months, reverse=True)]

    async def latest_user_month(self, channel: Named, user: Named) -> tuple[int, int] | None:
        months = await self.user_months(channel, user)
        return months[0] if months else None

    # -- lines ---------------------------------------------------------------------------------------------

    def channel_lines(
        self, channel: Named, lo: int, hi: int, *, reverse: bool = False
    ) -> AsyncIterator[LogLine]:
        """:meth:`channel_runs`, line by line."""
        return each_line(self.channel_runs(channel, lo, hi, reverse=reverse))

    def channel_runs(self, channel: Named, lo: int, hi: int, *, reverse: bool = False) -> AsyncIterator[Run]:
        return self._channel_runs(channel, lo, hi, reverse)

    async def _channel_runs(self, channel: Named, lo: int, hi: int, reverse: bool) -> AsyncIterator[Run]:
        if lo >= hi:
            return
        keys = await self.channel_keys(channel)
        periods = await self._channel_periods(keys.keys)
        days = [d for d in sorted(periods, reverse=reverse) if lo < (d + 1) * DAY_MS and d * DAY_MS < hi]
        runs = self._periods([periods[d] for d in days], "channel", lo, hi, reverse, keys.name)
        async with closing(runs):
            async for run in runs:
                yield run

    def user_lines(
        self, channel: Named, user: Named, lo: int, hi: int, *, reverse: bool = False
    ) -> AsyncIterator[LogLine]:
        """:meth:`user_runs`, line by line."""
        return each_line(self.user_runs(channel, user, lo, hi, reverse=reverse))

    def user_runs(
        self, channel: Named, user: Named, lo: int, hi: int, *, reverse: bool = False
    ) -> AsyncIterator[Run]:
        return self._user_runs(channel, user, lo, hi, reverse)

    async def _user_runs(
        self, channel: Named, user: Named, lo: int, hi: int, reverse: bool
    ) -> AsyncIterator[Run]:
        if lo >= hi:
            return
        known = None if reverse else _id_pair(channel, user)
        ahead = {} if known is None else self._known_pair_ahead(known, lo, hi)
        channel_keys, _, pairs = await self._pairs(channel, user)
        if not reverse:
            ahead.update(self._first_parts_ahead([p for p in pairs if p != known], lo, hi))
        periods = await self._known_periods(pairs, ahead, lo) or await self._user_periods(pairs)
        months = [
            m for m in sorted(periods, reverse=reverse) if lo < month_end_ms(m) and month_start_ms(m) < hi
        ]
        runs = self._periods([periods[m] for m in months], "user", lo, hi, reverse, channel_keys.name, ahead)
        async with closing(runs):
            async for run in runs:
                yield run

    def _known_pair_ahead(self, pair: Pair, lo: int, hi: int) -> dict[Partition, PagedQuery]:
        """A forward read of a user's month by ids (the channel's and the user's, as most URLs give them):
        the pair those ids make is the one that holds the user's lines, so its part 0's scan starts before
        the names are looked up (:meth:`_pairs`), not after, and its rows name the month's other parts
        (:meth:`_known_periods`): a user not read in the last minute waits for one query, not two. Unless
        its months, cached, say that month has nothing."""
        month = month_of(lo)
        if month_end_ms(month) < hi:
            return {}
        months = self._hit(("months", pair))
        if months is not None and (month, 0) not in months:
            return {}
        return {(*pair, month, 0): self._part_0(pair, month, lo, hi)}

    async def _known_periods(
        self, pairs: Sequence[Pair], ahead: dict[Partition, PagedQuery], lo: int
    ) -> dict[int, list[Partition]] | None:
        """The partitions of the one month a forward read by ids asks (:meth:`_known_pair_ahead`), from the
        first page of its part 0's scan: part 0, and the parts its rows name (their static ``parts``). None
        where that cannot tell: another pair may hold lines (a channel with lines without ids), or the
        first page has no row (a month without lines, or whose lines in the range are all in later parts):
        then the months' index does."""
        if len(pairs) != 1:
            return None
        pair = pairs[0]
        month = month_of(lo)
        scan = ahead.get((*pair, month, 0))
        if scan is None:
            return None
        rows = await scan.first_page()
        if not rows:
            return None
        later = sorted(p for p in rows[0][_PARTS] or () if p)
        return {month: [(*pair, month, part) for part in [0, *later]]}

    def _part_0(self, pair: Pair, month: int, lo: int, hi: int) -> PagedQuery:
        """The scan of part 0 of ``pair``'s ``month`` within ``[lo, hi)``, started now."""
        return self._query("user", *pair, month, 0, naive_utc(hi), naive_utc(lo), tuples=True)

    def _first_parts_ahead(self, pairs: Sequence[Pair], lo: int, hi: int) -> dict[Partition, PagedQuery]:
        """A forward read of one month: the scan of part 0 of the month of each pair whose months are not
        cached, started now, beside the read of its months (:meth:`_user_periods`) rather than after it. A
        month holds part 0 whenever it holds anything (:func:`store.keys.user_part`); a scan of a month the
        pair does not have finds nothing and is dropped."""
        month = month_of(lo)
        if month_end_ms(month) < hi:
            return {}
        return {
            (*pair, month, 0): self._part_0(pair, month, lo, hi)
            for pair in pairs
            if self._hit(("months", pair)) is None
        }

    async def _periods(
        self,
        periods: Sequence[Sequence[Partition]],
        table: str,
        lo: int,
        hi: int,
        reverse: bool,
        name: str,
        ahead: dict[Partition, PagedQuery] | None = None,
    ) -> AsyncIterator[Run]:
        """The lines of each period's partitions in turn, run by run (:meth:`store.merge.Merge.take`), the
        next period's scan started ahead (``ahead``: scans already started, by partition)."""
        if not periods:
            return
        bounds: tuple[Any, ...] = (naive_utc(hi), naive_utc(lo))
        if table == "channel":
            floor = naive_utc(lo - lo % CHANNEL_SPAN_MS) if lo > 0 else naive_utc(0)
            bounds = (floor, *bounds)

        def make(frame: Frame, index: int, owner: BlockOwner) -> LogLine:
            return frame_line(frame, index, owner, name)

        def span(frame: Frame, indices: Sequence[int], owner: BlockOwner) -> Span:
            return Span(frame, indices, owner, name)

        def start(partitions: Sequence[Partition]) -> list[tuple[Partition, PagedQuery]]:
            statement = f"{table}_desc" if reverse else table
            started = ahead if ahead is not None else {}
            return [
                (p, started.pop(p) if p in started else self._query(statement, *p, *bounds, tuples=True))
                for p in partitions
            ]

        nxt = start(periods[0])
        for i in range(len(periods)):
            current = nxt
            nxt = start(periods[i + 1]) if i + 1 < len(periods) else []
            merge = Merge(lo, hi, make, reverse=reverse, run=span)
            if reverse:
                stream = self._blocks_reversed(current, table, bounds, merge)
            else:
                stream = self._blocks_forward(current, merge)
            async with closing(stream):
                async for run in stream:
                    if run:
                        yield run

    async def _blocks_forward(
        self, scans: Sequence[tuple[Partition, PagedQuery]], merge: Merge
    ) -> AsyncIterator[Run]:
        """The merged lines of the partitions' scans, oldest first: the scans' blocks taken in order of their
        first lines across the partitions (usually one partition: part 0 of a day)."""
        if len(scans) == 1:
            partition, query = scans[0]
            pending: tuple[Any, ...] | None = None
            async for page in query.pages():
                for row in page:
                    if pending is not None:
                        frame = decode(pending[_FRAME])
                        merge.add(frame, _owner(partition[0], frame))
                        yield merge.take(row[_FIRST])
                    pending = row
            if pending is not None:
                frame = decode(pending[_FRAME])
                merge.add(frame, _owner(partition[0], frame))
            yield merge.take(None)
            return
        async for row, partition, firsts in _in_order(scans, newest_first=False):
            frame = decode(row[_FRAME])
            merge.add(frame, _owner(partition[0], frame))
            yield merge.take(min(firsts) if firsts else None)

    async def _blocks_reversed(
        self,
        scans: Sequence[tuple[Partition, PagedQuery]],
        table: str,
        bounds: tuple[Any, ...],
        merge: Merge,
    ) -> AsyncIterator[Run]:
        """The merged lines of the partitions' scans, newest first: the blocks taken in descending order of
        their first lines, each line given once no block still to come reaches as far (the blocks' first and
        last times known beforehand: from the scan itself when its first page holds all its blocks, as a read
        of the last seconds' lines does, else read by one more query of the blocks' times alone)."""
        whole = await asyncio.gather(*(query.only_page() for _, query in scans))
        more = [p for (p, _), rows in zip(scans, whole, strict=True) if rows is None]
        metas = await asyncio.gather(
            *(self._query(f"{table}_meta", *p, *bounds, tuples=True).all() for p in more)
        )
        found = [rows for rows in whole if rows is not None] + metas
        known = sorted((row[_FIRST], row[_LAST]) for rows in found for row in rows)  # ascending first_at
        starts = [first for first, _ in known]
        reach: list[int] = []  # reach[i]: the latest last_at of the blocks known[0..i]
        latest = -1
        for _first, last in known:
            latest = max(latest, last)
            reach.append(latest)

        def bound(received_first: int) -> int | None:
            """The latest line a block not received yet may hold: those with a first line at or before the
            last one received (ties counted in: a bound too late only holds lines back a little longer)."""
            at = bisect.bisect_right(starts, received_first)
            return reach[at - 1] if at else None

        async for row, partition, firsts in _in_order(scans, newest_first=True):
            frame = decode(row[_FRAME])
            merge.add(frame, _owner(partition[0], frame))
            yield merge.take(bound(int(row[_FIRST])) if firsts else None)
        yield merge.take(None)

    # -- counts and random picks ---------------------------------------------------------------------------

    def senders(self, channel: Named, lo: int, hi: int) -> AsyncIterator[tuple[str | None, str | None]]:
        return self._senders(channel, lo, hi)

    async def _senders(
        self, channel: Named, lo: int, hi: int
    ) -> AsyncIterator[tuple[str | None, str | None]]:
        async with closing(self.channel_lines(channel, lo, hi)) as lines:
            async for line in lines:
                yield sender_of(unmarked(line.stored))

    async def user_count(self, channel: Named, user: Named, lo: int, hi: int) -> tuple[int, str | None]:
        _, user_keys, _ = await self._pairs(channel, user)
        count = 0
        async with closing(self.user_lines(channel, user, lo, hi)) as lines:
            async for _line in lines:
                count += 1
        return count, user_keys.id

    async def _random(self, table: str, partitions: Sequence[Partition], hint: str) -> ChatEvent | None:
        """A line of the partitions' blocks picked at random (:func:`store.random_pick.pick`): a block in
        proportion to its lines, then a line of it."""

        async def blocks_of(partition: Partition) -> list[tuple[Partition, int, int]]:
            rows = await self._query(f"{table}_count", *partition, tuples=True).all()
            return [(partition, int(row[_FIRST]), int(row[2] or 0)) for row in rows]

        found = await asyncio.gather(*(blocks_of(p) for p in partitions))
        blocks = [block for rows in found for block in rows]

        async def count(block: tuple[Partition, int, int]) -> int:
            return block[2]

        async def nth(block: tuple[Partition, int, int], index: int) -> ChatEvent | None:
            partition, first_ms, _ = block
            rows = await self._query(f"{table}_at", *partition, naive_utc(first_ms), tuples=True).all()
            for row in rows:  # every block of the partition that starts then, in the order they were counted
                frame = decode(row[_FRAME])
                if index < len(frame):
                    ids, stored, received = frame.rest()
                    text = uuid_text(ids[index])
                    return stored_event(stored[index], text, frame.sents[index], received[index], hint)
                index -= len(frame)
            return None

        return await random_pick.pick(blocks, count, nth, _picked)

    async def random_channel_event(self, channel: Named) -> ChatEvent | None:
        keys = await self.channel_keys(channel)
        periods = await self._channel_periods(keys.keys)
        partitions = [p for day in periods.values() for p in day]
        if len(partitions) > random_pick.SAMPLE:
            partitions = random.sample(partitions, random_pick.SAMPLE)
        return await self._random("channel", partitions, keys.name)

    async def random_user_event(self, channel: Named, user: Named) -> ChatEvent | None:
        channel_keys, _, pairs = await self._pairs(channel, user)
        periods = await self._user_periods(pairs)
        partitions = [p for month in periods.values() for p in month]
        return await self._random("user", partitions, channel_keys.name)
