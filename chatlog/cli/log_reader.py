"""Reading the logs back from Cassandra for ``chatlog logs``: the reads of ``chatlog serve``
(:class:`store.read.LogReader`, one implementation of them; with fresh settings,
reads of the present include Kafka's unwritten events: :mod:`serve.fresh`), driven from synchronous
code on a private event loop, and their text form with the gaps in coverage marked.

A channel is named by its login or its Twitch id, a user likewise (``--user`` / ``--user-id``); both read
every key the name had (docs/storage.md: a renamed channel or user is one history).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final, TypeVar

from core.errors import ChatlogError, one_line
from core.logins import login_of
from core.times import format_time, now_ms
from schemas.chat_event import ChatEvent
from store.line import aclose, each_line
from store.protocol import ById, Named

if TYPE_CHECKING:
    from core.coverage_spans import Gap
    from core.settings import CassandraSettings
    from serve.settings import FreshSettings
    from serve.unwritten import UnwrittenReader
    from store.line import LogLine
    from store.protocol import LogStore
    from store.read import LogReader as StoreReader

MAX_MS: Final = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z: the end of an open range."""
DAY_MS: Final = 86_400_000
T = TypeVar("T")
_DONE: Final = object()


class LogReader:
    """A connected :class:`~store.read.LogReader` and the event loop that drives it, for
    synchronous callers. Every failure of the storage is a one-line :class:`ChatlogError`."""

    def __init__(self, settings: CassandraSettings, fresh: FreshSettings | None = None) -> None:
        from core.cql import open_session
        from store.read import LogReader as StoreReader
        from store.schema import require_layout

        self.settings = settings
        self._cluster, session = open_session(settings, keyspace=settings.cassandra_keyspace)
        self._loop = asyncio.new_event_loop()
        self._unwritten: UnwrittenReader | None = None
        try:
            require_layout(session, settings.cassandra_keyspace)
            stored: StoreReader = self._guarded(lambda: StoreReader(session), "preparing the reads")
            self.store: LogStore = stored
            if fresh is not None and fresh.serve_fresh:  # reads of the present: Kafka's unwritten events too
                from serve.fresh import FreshStore
                from serve.unwritten import UnwrittenReader

                self._unwritten = UnwrittenReader(fresh, settings.cassandra_keyspace)
                self.store = FreshStore(stored, self._unwritten)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._unwritten is not None:
            self._unwritten.close()
        self._loop.close()
        self._cluster.shutdown()

    def __enter__(self) -> LogReader:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _failure(self, exc: BaseException, doing: str) -> ChatlogError:
        where = f"Cassandra at {self.settings.cassandra_hosts}:{self.settings.cassandra_port}"
        reason = one_line(exc)
        if "does not exist" in reason or "unconfigured table" in reason:
            keyspace = self.settings.cassandra_keyspace
            reason += f" (keyspace {keyspace} predates these tables: `chatlog init` adds them)"
        return ChatlogError(f"{doing} from {where} failed: {type(exc).__name__}: {reason}")

    def _guarded(self, call: Any, doing: str) -> Any:
        from cassandra import DriverException
        from cassandra.cluster import NoHostAvailable

        try:
            return call()
        except (DriverException, NoHostAvailable) as exc:
            raise self._failure(exc, doing) from None

    def run(self, awaitable: Any, doing: str) -> Any:
        """The result of ``awaitable``, run on this reader's loop."""
        return self._guarded(lambda: self._loop.run_until_complete(awaitable), doing)

    def iterate(self, source: AsyncIterator[T], doing: str) -> Iterator[T]:
        """``source`` as a synchronous iterator (each item awaited on this reader's loop)."""

        async def step() -> object:
            return await anext(source, _DONE)

        try:
            while True:
                item = self.run(step(), doing)
                if item is _DONE:
                    return
                yield item
        finally:
            if not self._loop.is_closed():
                self._loop.run_until_complete(aclose(source))

    def channel(self, login: str | None, channel_id: str | None) -> Named:
        """The channel ``login`` or ``channel_id`` names; ChatlogError for an id nothing is logged under."""
        if channel_id is not None:
            the_id = channel_id.strip()
            found = self.run(self.store.channel_by_id(the_id), f"looking up channel id {the_id[:40]!r}")
            if found is None:
                raise ChatlogError(f"no logged channel has the id {the_id[:40]!r}")
            return ById(the_id, found)
        return login_of(login or "")

    def user(self, login: str | None, user_id: str | None) -> Named | None:
        """The user ``login`` or ``user_id`` names (None: neither given)."""
        if user_id is not None:
            the_id = user_id.strip()
            found = self.run(self.store.user_by_id("", the_id), f"looking up user id {the_id[:40]!r}")
            return ById(the_id, found or the_id)
        return None if login is None else login_of(login)

    def events(
        self,
        channel: Named,
        *,
        user: Named | None = None,
        since_ms: int | None = None,
        until_ms: int | None = None,
        reverse: bool = False,
        limit: int | None = None,
    ) -> Iterator[ChatEvent]:
        """Every stored event of ``channel`` (of ``user`` in it) with ``since <= sent_at < until``, in time
        order (``reverse``: newest first), at most ``limit``."""
        lo = since_ms if since_ms is not None else 0
        hi = until_ms if until_ms is not None else MAX_MS
        if user is None:
            runs = self.store.channel_runs(channel, lo, hi, reverse=reverse)
        else:
            runs = self.store.user_runs(channel, user, lo, hi, reverse=reverse)
        source = _parsed(each_line(runs))
        if limit is not None:
            source = _limited(source, limit)
        return self.iterate(source, f"reading #{channel}")


async def _parsed(lines: AsyncIterator[LogLine]) -> AsyncIterator[ChatEvent]:
    try:
        async for line in lines:
            yield line.event
    finally:
        await aclose(lines)


async def _limited(source: AsyncIterator[T], limit: int) -> AsyncIterator[T]:
    try:
        if limit <= 0:
            return
        n = 0
        async for item in source:
            yield item
            n += 1
            if n >= limit:
                return
    finally:
        await aclose(source)


def read_events(
    settings: CassandraSettings,
    channel: str | None = None,
    *,
    channel_id: str | None = None,
    user: str | None = None,
    user_id: str | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
    reverse: bool = False,
    limit: int | None = None,
) -> Iterator[ChatEvent]:
    """Every stored event of a channel (by login or id; of a user in it, by login or id) with
    ``since <= sent_at < until``, in time order (``reverse``: newest first), at most ``limit``."""
    with LogReader(settings) as reader:
        named = reader.channel(channel, channel_id)
        who = reader.user(user, user_id)
        yield from reader.events(
            named, user=who, since_ms=since_ms, until_ms=until_ms, reverse=reverse, limit=limit
        )


def format_text(event: ChatEvent) -> str:
    """``[2026-11-21 15:04:05] #channel user: text`` (UTC); other kinds than PRIVMSG are named.

    One line whatever the event holds: control characters (CR, LF, ESC...) in any field are shown as
    visible escapes (``\\r``, ``\\n``, ``\\x1b``; :mod:`serve.terminal`), so chat cannot rewrite the
    reader's terminal or fake a log line."""
    from serve.terminal import escape_controls

    who = event.user_login or event.display_name
    text = event.text or ""
    if event.is_action:
        text = f"/me {text}"
    kind = "" if event.kind == "PRIVMSG" else f" {event.kind}"
    head = f"[{format_time(event.sent_at)}] #{event.channel}{kind}"
    if who:
        return escape_controls(f"{head} {who}: {text}")
    return escape_controls(f"{head}: {text}" if text else head)


def interleave_gaps(
    lines: Iterable[tuple[int, str]], found: list[Gap], *, reverse: bool = False, trailing: bool = True
) -> Iterator[str]:
    """Text lines ``(time, line)`` in time order (``reverse``: newest first) with each gap's mark where it
    falls; the gaps beyond the last line only when ``trailing`` (not when a limit cut the lines short)."""
    from core.coverage_spans import gap_line

    pending = sorted(found, key=lambda g: g.start, reverse=reverse)
    for at, line in lines:
        while pending and (pending[0].start > at if reverse else pending[0].start <= at):
            yield gap_line(pending.pop(0))
        yield line
    if trailing:
        for gap in pending:
            yield gap_line(gap)


def text_with_gaps(
    settings: CassandraSettings,
    channel: str,
    events: Iterator[ChatEvent],
    since_ms: int | None,
    until_ms: int | None,
    *,
    reverse: bool = False,
    trailing: bool = True,
) -> Iterator[str]:
    """``format_text`` lines with a ``-- not logged ... --`` mark wherever the coverage ledger of the
    channel login ``channel`` has a gap (from ``since_ms``, else the first event, until ``until_ms``, else
    now). ``reverse``: the events come newest first, and without ``since_ms`` the gaps of the year before
    the newest event are marked."""

    from serve.coverage import channel_gaps

    first = next(events, None)
    if first is None:
        return
    end = until_ms if until_ms is not None else now_ms()
    if since_ms is not None:
        start = since_ms
    elif reverse:  # the oldest line is not known yet: the year before the newest (gaps are read for a year)
        start = max(0, min(end, first.sent_at + 1) - 366 * DAY_MS)
    else:
        start = first.sent_at
    gaps = channel_gaps(settings, login_of(channel), start, end)

    def lines() -> Iterator[tuple[int, str]]:
        yield first.sent_at, format_text(first)
        for event in events:
            yield event.sent_at, format_text(event)

    yield from interleave_gaps(lines(), gaps, reverse=reverse, trailing=trailing)
