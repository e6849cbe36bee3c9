"""Fresh reads: a :class:`~store.protocol.LogStore` whose reads of the present include what Kafka holds
and the sink has not written yet (:mod:`serve.unwritten`), so a chat client's history on join, a channel's
current day and a user's current month have no hole while the sink lags or is stopped.

:class:`FreshStore` wraps the Cassandra store (and is wrapped by :class:`serve.consent.ConsentStore`, so
opt-outs hold for the unwritten events too). A range whose end is within :data:`HORIZON_MS` of now reads
the channel's unwritten events (one short Kafka read, off the event loop, shared for
:data:`SHARE_S` by the requests of the same channel) and merges them into the stored lines in time order,
each message once: an unwritten event whose id is stored is the sink's row, already given. The days and
months a channel or user has include today's and this month's when only Kafka holds them yet. Every
other read is the wrapped store's.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable
from datetime import date
from typing import TYPE_CHECKING, Any, Final

from consent.rule import whose
from core.logins import login_of
from core.times import utc_day
from schemas.chat_event import ChatEvent
from store.keys import message_uuid
from store.line import LogLine, Run, aclose
from store.protocol import ById, Channel, LogStore, Named

if TYPE_CHECKING:
    from serve.unwritten import Unwritten, UnwrittenReader
    from store.names import NameSeen

HORIZON_MS: Final = 86_400_000
"""A range that ends more than this before now is answered from Cassandra alone."""
SHARE_S: Final = 0.05
"""Requests of one channel within this share one Kafka read (a route asks the days, then the lines); short,
since a line said is visible only once a read after it starts (``chatlog bench fresh``)."""


def _uuid(message_id: uuid.UUID | str) -> uuid.UUID:
    """A row's message id as its uuid column (an event read from elsewhere carries its id's text)."""
    return message_id if isinstance(message_id, uuid.UUID) else message_uuid(message_id)


class FreshStore:
    """``inner`` with the unwritten events of ``reader`` merged into reads of the present (module doc)."""

    def __init__(
        self,
        inner: LogStore,
        reader: UnwrittenReader,
        clock: Callable[[], float] = time.time,
        share_s: float = SHARE_S,
    ) -> None:
        self.inner = inner
        self.reader = reader
        self._clock = clock
        self._share_s = share_s
        self._shared: dict[str, tuple[float, asyncio.Future[Unwritten]]] = {}

    # --- the unwritten events -------------------------------------------------------------------------

    async def _login(self, channel: Named) -> str | None:
        if isinstance(channel, ById):
            return await self.inner.channel_by_id(channel.id)
        return login_of(channel) or None

    async def unwritten(self, channel: Named) -> list[ChatEvent]:
        """The channel's events in Kafka beyond the sink's written offsets (read at most every
        :data:`SHARE_S` per channel)."""
        login = await self._login(channel)
        if login is None:
            return []
        now = time.monotonic()
        shared = self._shared.get(login)
        if shared is None or now - shared[0] > self._share_s:
            if len(self._shared) > 1000:
                self._shared = {k: v for k, v in self._shared.items() if now - v[0] <= self._share_s}
            future = asyncio.ensure_future(asyncio.to_thread(self.reader.read, login))
            shared = (now, future)
            self._shared[login] = shared
        found = await asyncio.shield(shared[1])
        return found.events

    def _fresh(self, hi: int) -> bool:
        return hi > self._clock() * 1000 - HORIZON_MS

    async def _merged(
        self,
        runs: AsyncIterator[Run],
        pick: Callable[[ChatEvent], bool],
        channel: Named,
        lo: int,
        hi: int,
        reverse: bool,
    ) -> AsyncIterator[Run]:
        """``runs`` with the unwritten events of ``channel`` that ``pick`` takes in ``[lo, hi)`` merged
        in, each message once (module doc). The stored lines' read starts beside the Kafka read, not after
        it: a read of the present waits for the slower of the two, not for both in turn."""
        ahead = asyncio.ensure_future(_first(runs))
        try:
            found = [e for e in await self.unwritten(channel) if lo <= e.sent_at < hi and pick(e)]
            head = await ahead
            if not found:
                if head is not None:
                    yield head
                    async for run in runs:
                        yield run
                return
            found.sort(key=lambda e: e.sent_at, reverse=reverse)
            pending = deque(found)
            edge = min(e.sent_at for e in found)
            stored: set[uuid.UUID] = set()

            def before(event: ChatEvent, line: LogLine) -> bool:
                return event.sent_at > line.sent_at if reverse else event.sent_at < line.sent_at

            async for run in _resumed(head, runs):
                merged: list[LogLine] = []
                for line in run:
                    while pending and before(pending[0], line):
                        event = pending.popleft()
                        if message_uuid(event.message_id) not in stored:
                            merged.append(LogLine.of(event))
                    if line.sent_at >= edge:
                        stored.add(_uuid(line.message_id))
                    merged.append(line)
                yield merged
            rest = [LogLine.of(event) for event in pending if message_uuid(event.message_id) not in stored]
            if rest:
                yield rest
        finally:
            if not ahead.done():
                ahead.cancel()
                await asyncio.wait([ahead])
            if not ahead.cancelled():
                ahead.exception()  # retrieved: raised above if it was needed, else its read was dropped
            await aclose(runs)

    # --- reads of the present ---------------------------------------------------------------------------

    def channel_runs(self, channel: Named, lo: int, hi: int, *, reverse: bool = False) -> AsyncIterator[Run]:
        runs = self.inner.channel_runs(channel, lo, hi, reverse=reverse)
        if not self._fresh(hi):
            return runs
        return self._merged(runs, lambda _e: True, channel, lo, hi, reverse)

    def user_runs(
        self, channel: Named, user: Named, lo: int, hi: int, *, reverse: bool = False
    ) -> AsyncIterator[Run]:
        runs = self.inner.user_runs(channel, user, lo, hi, reverse=reverse)
        if not self._fresh(hi):
            return runs
        return self._user_merged(runs, channel, user, lo, hi, reverse)

    async def _user_merged(
        self, runs: AsyncIterator[Run], channel: Named, user: Named, lo: int, hi: int, reverse: bool
    ) -> AsyncIterator[Run]:
        user_id = await self.inner.user_id(user)
        login = None if isinstance(user, ById) else login_of(user)

        def theirs(event: ChatEvent) -> bool:  # the user's rows: sent by them, or a moderation of them
            event_user, event_login = whose(event)
            if event_user is not None and user_id is not None:
                return event_user == user_id
            return login is not None and (event_login or "").lower() == login

        async for run in self._merged(runs, theirs, channel, lo, hi, reverse):
            yield run

    async def channel_days(self, channel: Named) -> list[date]:
        days = await self.inner.channel_days(channel)
        newest = max((e.sent_at for e in await self.unwritten(channel)), default=None)
        if newest is not None and (not days or utc_day(newest) > days[0]):
            days.insert(0, utc_day(newest))
        return days

    async def latest_day(self, channel: Named) -> date | None:
        day = await self.inner.latest_day(channel)
        newest = max((e.sent_at for e in await self.unwritten(channel)), default=None)
        if newest is not None and (day is None or utc_day(newest) > day):
            return utc_day(newest)
        return day

    async def user_months(self, channel: Named, user: Named) -> list[tuple[int, int]]:
        months = await self.inner.user_months(channel, user)
        newest = await self._newest_month(channel, user)
        if newest is not None and (not months or newest > months[0]):
            months.insert(0, newest)
        return months

    async def latest_user_month(self, channel: Named, user: Named) -> tuple[int, int] | None:
        month = await self.inner.latest_user_month(channel, user)
        newest = await self._newest_month(channel, user)
        if newest is not None and (month is None or newest > month):
            return newest
        return month

    async def _newest_month(self, channel: Named, user: Named) -> tuple[int, int] | None:
        now_ms = int(self._clock() * 1000)
        runs = self._user_merged(_nothing(), channel, user, now_ms - HORIZON_MS, now_ms + HORIZON_MS, False)
        newest = None
        async for run in runs:
            if run:
                newest = run[-1].sent_at
        if newest is None:
            return None
        day = utc_day(newest)
        return day.year, day.month

    # --- everything else: the wrapped store's -------------------------------------------------------------

    @property
    def session(self) -> Any | None:
        return self.inner.session

    async def channels(self) -> list[Channel]:
        return await self.inner.channels()

    async def channel_by_id(self, channel_id: str) -> str | None:
        return await self.inner.channel_by_id(channel_id)

    async def channel_id(self, channel: Named) -> str | None:
        return await self.inner.channel_id(channel)

    async def user_id(self, user: Named) -> str | None:
        return await self.inner.user_id(user)

    async def user_name_history(self, user_id: str) -> list[NameSeen]:
        return await self.inner.user_name_history(user_id)

    async def user_by_id(self, channel: Named, user_id: str) -> str | None:
        return await self.inner.user_by_id(channel, user_id)

    async def random_channel_event(self, channel: Named) -> ChatEvent | None:
        return await self.inner.random_channel_event(channel)

    async def random_user_event(self, channel: Named, user: Named) -> ChatEvent | None:
        return await self.inner.random_user_event(channel, user)

    async def user_count(self, channel: Named, user: Named, lo: int, hi: int) -> tuple[int, str | None]:
        return await self.inner.user_count(channel, user, lo, hi)

    def senders(self, channel: Named, lo: int, hi: int) -> AsyncIterator[tuple[str | None, str | None]]:
        return self.inner.senders(channel, lo, hi)

    async def ping(self) -> None:
        await self.inner.ping()


async def _first(runs: AsyncIterator[Run]) -> Run | None:
    """The first of ``runs`` (None: there are none)."""
    return await anext(runs, None)


async def _resumed(head: Run | None, rest: AsyncIterator[Run]) -> AsyncIterator[Run]:
    """``head`` (None: nothing at all) and then ``rest``."""
    if head is None:
        return
    yield head
    async for run in rest:
        yield run


async def _nothing() -> AsyncIterator[Run]:
    return
    yield  # an async generator that yields nothing
