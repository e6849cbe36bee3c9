"""Which ``login:`` user keys have rows in a channel key's months (schemas/cassandra.cql ``user_login_keys``).

A user's read by id also reads the user's ``login:<login>`` partitions of ``chat_by_user`` (a deleted message
names its author by login only; lines without ids): for almost every user they are empty, and each costs a
query. The sink writes a row of ``user_login_keys`` (channel key, month, login key) with every such user row,
and ``chatlog init`` writes them for a keyspace made before the table (:mod:`core.user_months`). So a
(channel key, login key) pair whose key has no index row in any month of a read's range holds nothing there:
:meth:`LoginKeys.kept` drops it before anything is read.

Each (channel key, month) is read whole (one partition; the months missing from the cache in one
``period IN ?`` query) and cached as a frozenset: a past month :attr:`LoginKeys.ttl_s`, the current one (and
any later one) :attr:`LoginKeys.current_ttl_s` (a new login key in it shows within that time). A month with
more than :attr:`LoginKeys.max_keys` keys is not held: every login key may have rows there. On a keyspace
whose login keys are not indexed yet (``chatlog init`` has not run since the table came: the table's comment,
checked once at the store's start), nothing is dropped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Final

from core.times import now_ms
from schemas.cql import LOGIN_KEY_PREFIX, month_period, month_periods
from serve.store.aiocql import PagedQuery

Pair = tuple[str, str]
"""(channel key, user key) of a user's partitions in a channel."""

MONTHS_PER_QUERY: Final = 48
"""Months asked in one ``period IN ?`` query (a channel's whole life is several)."""
MAX_MONTHS: Final = 1200
"""A range longer than this many months (a read without an end) drops nothing: not worth the queries."""
_MONTH_MS: Final = 31 * 86_400_000


class LoginKeys:
    """The ``login:`` user keys that have rows in a channel key's months, cached per (channel key, month)."""

    def __init__(
        self,
        session: Any,
        *,
        indexed: bool,
        ttl_s: float = 60.0,
        current_ttl_s: float = 5.0,
        max_entries: int = 10_000,
        max_keys: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
        wall_ms: Callable[[], int] = now_ms,
    ) -> None:
        """``indexed``: whether the keyspace's login keys are all indexed (else :meth:`kept` keeps every
        pair, and the table is not even read: it may not exist yet)."""
        self.session = session
        self.indexed = indexed
        self.ttl_s = ttl_s
        """How long a past month's keys are held (a row imported into a past month shows within it)."""
        self.current_ttl_s = current_ttl_s
        """How long the current month's keys are held (a new login key shows within it)."""
        self.max_entries = max_entries
        """Cached (channel key, month)s; past it the cache starts over."""
        self.max_keys = max_keys
        """A month with more keys than this is not held (its partition is read up to one more)."""
        self.queries = 0
        """Index queries sent (for tests and metrics)."""
        self._clock = clock
        self._wall_ms = wall_ms
        self._cache: dict[tuple[str, int], tuple[float, frozenset[str] | None]] = {}
        self._statement: Any = None
        if indexed:
            self._statement = session.prepare(
                "SELECT period, user_key FROM user_login_keys WHERE channel_key = ? AND period IN ? "
                f"PER PARTITION LIMIT {int(max_keys) + 1}"
            )

    def _months(self, lo: int, hi: int) -> list[int] | None:
        """The month periods of ``[lo, hi)`` the index can answer for; None when it cannot (not indexed, an
        empty range, or one of more than :data:`MAX_MONTHS` months)."""
        if not self.indexed or hi <= lo or hi - lo > MAX_MONTHS * _MONTH_MS:
            return None
        return month_periods(lo, hi)

    async def kept(self, pairs: list[Pair], lo: int, hi: int) -> list[Pair]:
        """``pairs`` without those of a ``login:`` user key that has no row in its channel key in any month
        of the range ``[lo, hi)`` (epoch ms)."""
        months = self._months(lo, hi)
        channels = sorted({c for c, u in pairs if u.startswith(LOGIN_KEY_PREFIX)})
        if months is None or not channels:
            return pairs
        present: dict[str, frozenset[str] | None] = {}
        for channel in channels:  # almost always one (a channel's id; its login keys hold plain IRC lines)
            present[channel] = await self.present(channel, months)
        return [
            (c, u)
            for c, u in pairs
            if not u.startswith(LOGIN_KEY_PREFIX) or (found := present[c]) is None or u in found
        ]

    async def none_in(self, channel_keys: Sequence[str], lo: int, hi: int) -> bool:
        """Whether no ``login:`` user key has rows in any of ``channel_keys`` in ``[lo, hi)`` (epoch ms), as
        far as the index tells (False when it cannot: not indexed, a range too long, a month too big)."""
        months = self._months(lo, hi)
        if months is None:
            return False
        for channel in channel_keys:
            if await self.present(channel, months) != frozenset():
                return False
        return True

    async def present(self, channel_key: str, months: Sequence[int]) -> frozenset[str] | None:
        """The login user keys with rows in ``channel_key`` in any of ``months``; None: unknown (a month
        with more than :attr:`max_keys`), every key may have rows."""
        now = self._clock()
        held: list[frozenset[str] | None] = []
        missing: list[int] = []
        for month in months:
            hit = self._cache.get((channel_key, month))
            if hit is not None and now < hit[0]:
                held.append(hit[1])
            else:
                missing.append(month)
        if missing:
            held.extend(await self._read(channel_key, missing, now))
        if any(keys is None for keys in held):
            return None
        return frozenset().union(*(keys for keys in held if keys is not None))

    async def _read(self, channel_key: str, months: list[int], now: float) -> list[frozenset[str] | None]:
        """Each of ``months``' keys in ``channel_key``, read from the index and cached."""
        found: dict[int, list[str]] = {month: [] for month in months}
        for i in range(0, len(months), MONTHS_PER_QUERY):
            batch = months[i : i + MONTHS_PER_QUERY]
            self.queries += 1
            query = PagedQuery(self.session, self._statement, (channel_key, batch))
            async for row in query.rows():
                found[row.period].append(row.user_key)
        if len(self._cache) + len(months) > self.max_entries:
            self._cache.clear()
        current = month_period(self._wall_ms())
        out: list[frozenset[str] | None] = []
        for month, keys in found.items():
            held = frozenset(keys) if len(keys) <= self.max_keys else None
            ttl = self.ttl_s if month < current else min(self.ttl_s, self.current_ttl_s)
            self._cache[(channel_key, month)] = (now + ttl, held)
            out.append(held)
        return out
