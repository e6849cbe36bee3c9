"""Reading the coverage ledger: a channel's spans and gaps over a time range (``chatlog coverage``, the
gap marks of ``chatlog logs``). The sink writes the ledger (:mod:`sink.side.ledger`); the spans and
gaps are computed by :mod:`core.coverage_spans`. The gaps' times whose lines were imported from a peer
(``chatlog fill``, which writes ``coverage_fills``) say so.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from core import times
from core.coverage_spans import Fill, Gap, SessionKey, Span, gaps, spans, with_fills
from core.times import epoch_ms
from schemas.coverage import DAY_MS, CoverageEvent

if TYPE_CHECKING:
    from core.settings import CassandraSettings

log = logging.getLogger(__name__)

LOOKBACK_MS: Final = 7 * 3600 * 1000
"""How far before a range the reader looks for the joins of spans still open: the ingesters announce
what they cover every 6 hours (CHATLOG_INGEST_COVERAGE_REFRESH_S), plus an hour."""
SILENT_AFTER_MS: Final = 10_000
"""A worker run with no sign of life for this long is gone (ingesters send one every 2 s by default)."""


@dataclass(frozen=True)
class Coverage:
    """A channel's coverage over ``[since_ms, until_ms)``."""

    channel: str
    since_ms: int
    until_ms: int
    spans: list[Span]
    gaps: list[Gap]
    fills: list[Fill] = field(default_factory=list)
    """The fills from peers (``chatlog fill``) of times in the range, by start."""


EVENTS_CQL = (
    "SELECT at, replica, worker, session, state, reason FROM {ks}.coverage_by_channel "
    "WHERE channel = ? AND day = ? AND at >= ? AND at < ?"
)
FILLS_CQL = (
    "SELECT start_at, end_at, peer, filled_at, lines, dropped FROM {ks}.coverage_fills "
    "WHERE channel = ? AND day = ?"
)
_SEEN_CQL = "SELECT last_seen FROM {ks}.coverage_sessions WHERE replica = ? AND worker = ? AND session = ?"


def read_coverage(
    session: Any,
    keyspace: str,
    channel: str,
    since_ms: int,
    until_ms: int,
    *,
    now_ms: int | None = None,
    whole_range: bool = False,
) -> Coverage:
    """Spans and gaps of ``channel`` in ``[since_ms, until_ms)`` from the ledger (a connected session).

    A span that ended before the range (within the look-back) shows no more, but the gap after it does.
    The gaps count from the channel's first coverage or fill on (a time filled from a peer before a logger
    of ours had the channel is a gap, filled); ``whole_range``: from ``since_ms`` (every time no logger
    covered, as ``chatlog fill`` asks)."""
    now = now_ms if now_ms is not None else times.now_ms()
    until = min(until_ms, now)
    query = session.prepare(EVENTS_CQL.format(ks=keyspace))
    events: list[CoverageEvent] = []
    for day in days_to_read(since_ms, until):
        for row in session.execute(query, (channel, day, since_ms - LOOKBACK_MS, until)):
            events.append(event_from_row(channel, row))
    last_seen = read_last_seen(session, keyspace, {(e.replica, e.worker, e.session) for e in events})
    known = spans(events, last_seen, now_ms=now, silent_after_ms=SILENT_AFTER_MS)
    found = [s for s in known if s.end > since_ms and s.start < until]
    fills = read_fills(session, keyspace, channel, since_ms, until)
    starts = [s.start for s in known] + [f.start for f in fills]
    first = since_ms if whole_range else (min(starts) if fills else None)
    holes = with_fills(gaps(known, since_ms=since_ms, until_ms=until, covered_from=first), fills)
    return Coverage(channel, since_ms, until, found, holes, fills)


def read_ledger(
    session: Any, keyspace: str, channel: str, since_ms: int, until_ms: int, *, whole_range: bool = False
) -> Coverage:
    """:func:`read_coverage` for a command: what fails is one line (:class:`core.errors.ChatlogError`)
    naming the keyspace, and ``chatlog init`` when the tables are missing."""
    from cassandra import DriverException, InvalidRequest

    from core.cql import refusal_reason
    from core.errors import ChatlogError, one_line

    try:
        return read_coverage(session, keyspace, channel, since_ms, until_ms, whole_range=whole_range)
    except InvalidRequest as exc:
        reason = refusal_reason(exc)
        raise ChatlogError(
            f"reading the coverage ledger in keyspace {keyspace}: {reason} "
            "(`chatlog init` creates its tables)"
        ) from None
    except DriverException as exc:
        raise ChatlogError(f"reading the coverage ledger: {one_line(exc)}") from None


def read_fills(session: Any, keyspace: str, channel: str, since_ms: int, until_ms: int) -> list[Fill]:
    """The fills of ``channel`` that overlap ``[since_ms, until_ms)`` (a fill lies within one UTC day, in
    that day's partition); none in a keyspace made before ``chatlog fill`` existed (`chatlog init` adds
    the table)."""
    from cassandra import InvalidRequest

    if until_ms <= since_ms:
        return []
    try:
        query = session.prepare(FILLS_CQL.format(ks=keyspace))
    except InvalidRequest:
        return []
    out: list[Fill] = []
    for day in range(since_ms // DAY_MS, (until_ms - 1) // DAY_MS + 1):
        for row in session.execute(query, (channel, day)):
            fill = Fill(
                start=epoch_ms(row.start_at),
                end=epoch_ms(row.end_at),
                peer=row.peer,
                filled_at=epoch_ms(row.filled_at),
                lines=row.lines or 0,
                dropped=row.dropped or 0,
            )
            if fill.start < until_ms and fill.end > since_ms:
                out.append(fill)
    return sorted(out, key=lambda f: (f.start, f.peer))


def days_to_read(since_ms: int, until_ms: int) -> range:
    """The day partitions to read for ``[since_ms, until_ms)`` and the look-back before it."""
    return range((since_ms - LOOKBACK_MS) // DAY_MS, until_ms // DAY_MS + 1)


def event_from_row(channel: str, row: Any) -> CoverageEvent:
    return CoverageEvent(
        replica=row.replica,
        worker=row.worker,
        session=row.session,
        state=row.state,
        at=epoch_ms(row.at),
        channel=channel,
        reason=row.reason or "",
    )


def read_last_seen(
    session: Any, keyspace: str, keys: Collection[SessionKey], concurrency: int = 32
) -> dict[SessionKey, int]:
    """The last sign of life of each worker run in ``keys``."""
    from cassandra.concurrent import execute_concurrent_with_args

    ordered = list(keys)
    if not ordered:
        return {}
    query = session.prepare(_SEEN_CQL.format(ks=keyspace))
    out: dict[SessionKey, int] = {}
    results = execute_concurrent_with_args(session, query, ordered, concurrency=concurrency)
    for key, (_ok, rows) in zip(ordered, results, strict=True):
        row = rows.one()
        if row is not None and row.last_seen is not None:
            out[key] = epoch_ms(row.last_seen)
    return out


def channel_gaps(settings: CassandraSettings, channel: str, since_ms: int, until_ms: int) -> list[Gap]:
    """The gaps of ``channel`` in the range, for marking them in a text log; none when the keyspace has
    no ledger (made before it existed) or the range is longer than a year (too many days to read)."""
    from cassandra import InvalidRequest

    from core.cql import connect

    if until_ms - since_ms > 366 * DAY_MS:
        log.warning("gaps are marked for ranges up to a year; give --since to see them")
        return []
    cluster, session = connect(settings)
    try:
        return read_coverage(session, settings.cassandra_keyspace, channel, since_ms, until_ms).gaps
    except InvalidRequest:
        return []
    finally:
        cluster.shutdown()
