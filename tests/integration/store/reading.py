"""What the reader's integration tests read with: a session on a fresh keyspace, a
:class:`store.read.LogReader` run to completion, the events of its lines (each line's own fields checked
against its event), and a session that records what the reader sends."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

import msgspec

from consent.rule import whose
from core.testing import eventually
from schemas.chat_event import ChatEvent
from store.line import LogLine
from store.read import LogReader

T = TypeVar("T")
FAR = 253_402_300_799_999
"""A time after every line (the end of year 9999)."""
BATCH = 40
"""Events per micro-batch of a test's writes: a period's lines in several blocks."""


def shuffled(events: list[ChatEvent], seed: int = 7) -> list[ChatEvent]:
    """``events`` in another order: written in batches, a period's blocks then overlap in time (late lines,
    a replay)."""
    out = list(events)
    random.Random(seed).shuffle(out)
    return out


def run(session: Any, body: Callable[[LogReader], Awaitable[T]], *, fetch_size: int = 4) -> T:
    """``body`` with a reader of small pages (``fetch_size`` blocks: a period's scan is paged) and no
    cached channel list."""

    async def main() -> T:
        return await body(LogReader(session, fetch_size=fetch_size, channels_ttl_s=0))

    return asyncio.run(main())


OWNED: Counter[bool] = Counter()
"""How many lines read came with their partition's ids (``LogLine.owner``) and how many without."""


async def events(lines: AsyncIterator[LogLine]) -> list[ChatEvent]:
    """The events of ``lines``; each line's own fields (read without a parse) are its event's, its owner
    the ids the opt-out rule decides it by."""
    out = []
    async for line in lines:
        raw, sent_at, chat, owner = line.raw, line.sent_at, line.chat(), line.owner
        event = line.event
        assert (raw, sent_at) == (event.raw, event.sent_at)
        if chat is not None:
            assert event.kind == "PRIVMSG" and chat == (event.channel, event.user_login, event.text)
        if owner is not None:
            assert owner == (event.channel_id, whose(event)[0])
        OWNED[owner is not None] += 1
        out.append(event)
    return out


def as_read(events: list[ChatEvent]) -> list[ChatEvent]:
    """``events`` as a reader gives them back: without the ingester (not part of the stored line)."""
    return [msgspec.structs.replace(e, ingester=None) for e in events]


class Recorded:
    """A real session that records the values of each statement a reader sends through it (and sends it)."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.sent: list[tuple[Any, ...]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def execute_async(self, statement: Any, params: Any = None, *args: Any, **kwargs: Any) -> Any:
        self.sent.append(tuple(params or ()))
        return self._session.execute_async(statement, params, *args, **kwargs)

    def scans(self) -> list[tuple[Any, ...]]:
        """The partitions whose blocks were asked for, in the order asked: the values of each statement
        bound by a time (a block table's), up to the first time."""
        out = []
        for values in self.sent:
            times = [i for i, v in enumerate(values) if isinstance(v, datetime)]
            if times:
                out.append(values[: times[0]])
        return out


class _HeldFuture:
    """A driver's response future whose rows reach the reader only once :meth:`release` is called."""

    def __init__(self, future: Any) -> None:
        self._future = future
        self._callbacks: tuple[Any, Any] | None = None
        self._released = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._future, name)

    def add_callbacks(self, callback: Any, errback: Any) -> None:
        if self._released:
            self._future.add_callbacks(callback, errback)
        else:
            self._callbacks = (callback, errback)

    def release(self) -> None:
        self._released = True
        if self._callbacks is not None:
            self._future.add_callbacks(*self._callbacks)


class HeldMonths(Recorded):
    """:class:`Recorded` whose answers to a user's months (the statement of two values: channel key, user
    key) are held from :meth:`hold` until :meth:`release`: what a reader sends while it waits for them is in
    :attr:`sent`. One asked after the release is answered at once."""

    def __init__(self, session: Any) -> None:
        super().__init__(session)
        self.held: list[_HeldFuture] = []
        self._holding = False

    def hold(self) -> None:
        """From now on, hold the months' answers; what was sent and held before is forgotten."""
        self.sent, self.held, self._holding = [], [], True

    async def asked(self, timeout: float = 10.0) -> None:
        """Wait until a user's months are asked (and held)."""
        await eventually(lambda: bool(self.held), timeout, "a user's months asked")

    def execute_async(self, statement: Any, params: Any = None, *args: Any, **kwargs: Any) -> Any:
        future = super().execute_async(statement, params, *args, **kwargs)
        if len(params or ()) != 2 or not self._holding:
            return future
        held = _HeldFuture(future)
        self.held.append(held)
        return held

    def release(self) -> None:
        self._holding = False
        for held in self.held:
            held.release()
