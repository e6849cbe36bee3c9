"""Reading the logs back from Cassandra, in time order (``chatlog logs``).

A channel's events live in ``messages_by_channel`` partitions of 5-minute buckets; ``channel_buckets``
lists the buckets that hold anything, so a read visits only those. A user's events come from
``messages_by_user`` in the same candidate buckets (a user has a partition only where the channel does).
Rows come back as :class:`~schemas.chat_event.ChatEvent`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from core.errors import ChatlogError
from core.times import format_time
from schemas.chat_event import FIELD_NAMES, ChatEvent
from schemas.cql import bucket_of

if TYPE_CHECKING:
    from core.settings import CassandraSettings

_EPOCH = datetime(1970, 1, 1)
_MS = timedelta(milliseconds=1)
_TIMESTAMPS = frozenset({"sent_at", "received_at"})
MAX_MS = 2**62
READ_AHEAD = 16
"""Buckets whose first page is requested ahead of the one being read."""


def _ms(value: datetime) -> int:
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return (value - _EPOCH) // _MS


def row_event(row: Any) -> ChatEvent:
    """The event of a ``messages_by_channel`` or ``messages_by_user`` row of every column of the event."""
    values: dict[str, Any] = {}
    for name in FIELD_NAMES:
        value = getattr(row, name)
        if name in _TIMESTAMPS:
            value = _ms(value)
        elif name == "tags":
            value = dict(value or {})
        elif name == "is_action":
            value = bool(value)
        values[name] = value
    return ChatEvent(**values)


def read_events(
    settings: CassandraSettings,
    channel: str,
    *,
    user: str | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
) -> Iterator[ChatEvent]:
    """Every stored event of ``channel`` (of ``user`` in it) with ``since <= sent_at < until``, in order."""
    from cassandra import DriverException
    from cassandra.cluster import NoHostAvailable

    from core.cql import open_session

    channel = channel.lstrip("#").lower()
    lo = since_ms if since_ms is not None else 0
    hi = until_ms if until_ms is not None else MAX_MS
    cluster, session = open_session(settings, keyspace=settings.cassandra_keyspace)
    columns = ", ".join(FIELD_NAMES)
    buckets_cql = "SELECT bucket FROM channel_buckets WHERE channel = ? AND bucket >= ? AND bucket < ?"
    try:
        if user is None:
            key: tuple[str, ...] = (channel,)
            rows_cql = (
                f"SELECT {columns} FROM messages_by_channel "
                "WHERE channel = ? AND bucket = ? AND sent_at >= ? AND sent_at < ?"
            )
        else:
            key = (channel, user.lower())
            rows_cql = (
                f"SELECT {columns} FROM messages_by_user "
                "WHERE channel = ? AND user_login = ? AND bucket = ? AND sent_at >= ? AND sent_at < ?"
            )
        buckets_stmt, rows_stmt = session.prepare(buckets_cql), session.prepare(rows_cql)
        buckets_stmt.fetch_size = rows_stmt.fetch_size = 1000
        buckets = iter(session.execute(buckets_stmt, (channel, bucket_of(lo), hi)))
        # the next buckets' first pages are fetched while this one's rows are yielded (a user has
        # nothing in most of the channel's buckets: one round trip each, overlapped)
        ahead: deque[Any] = deque()

        def fetch_next() -> None:
            bucket_row = next(buckets, None)
            if bucket_row is not None:
                ahead.append(session.execute_async(rows_stmt, (*key, bucket_row.bucket, lo, hi)))

        for _ in range(READ_AHEAD):
            fetch_next()
        while ahead:
            page = ahead.popleft().result()
            fetch_next()
            for row in page:
                yield row_event(row)
    except (DriverException, NoHostAvailable) as exc:
        where = f"Cassandra at {settings.cassandra_hosts}:{settings.cassandra_port}"
        reason = " ".join(str(exc).split())[:200]
        raise ChatlogError(
            f"reading #{channel} from {where} failed: {type(exc).__name__}: {reason}"
        ) from None
    finally:
        cluster.shutdown()


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


def text_with_gaps(
    settings: CassandraSettings,
    channel: str,
    events: Iterator[ChatEvent],
    since_ms: int | None,
    until_ms: int | None,
) -> Iterator[str]:
    """``format_text`` lines with a ``-- not logged ... --`` mark wherever the coverage ledger has a gap
    (from ``since_ms``, else the first event, until ``until_ms``, else now)."""
    import time

    from core.coverage_spans import interleave
    from serve.coverage import channel_gaps

    first = next(events, None)
    if first is None:
        return
    start = since_ms if since_ms is not None else first.sent_at
    end = until_ms if until_ms is not None else int(time.time() * 1000)
    gaps = channel_gaps(settings, channel.lstrip("#").lower(), start, end)

    def lines() -> Iterator[tuple[int, str]]:
        yield first.sent_at, format_text(first)
        for event in events:
            yield event.sent_at, format_text(event)

    yield from interleave(lines(), gaps)
