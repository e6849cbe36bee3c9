"""Reading the coverage ledger: a channel's spans and gaps over a time range (``chatlog coverage``, the
gap marks of ``chatlog logs``). The sink writes the ledger (:mod:`sink.driver.ledger`); the spans and
gaps are computed by :mod:`core.coverage_spans`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from core.coverage_spans import Gap, SessionKey, Span, gaps, spans
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


def read_coverage(
    session: Any, keyspace: str, channel: str, since_ms: int, until_ms: int, *, now_ms: int | None = None
) -> Coverage:
    """Spans and gaps of ``channel`` in ``[since_ms, until_ms)`` from the ledger (a connected session)."""
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    until = min(until_ms, now)
    first_day = (since_ms - LOOKBACK_MS) // DAY_MS
    events: list[CoverageEvent] = []
    query = session.prepare(
        f"SELECT at, replica, worker, session, state, reason FROM {keyspace}.coverage_by_channel "
        "WHERE channel = ? AND day = ? AND at >= ? AND at < ?"
    )
    for day in range(first_day, until // DAY_MS + 1):
        for row in session.execute(query, (channel, day, since_ms - LOOKBACK_MS, until)):
            at = _ms(row.at)
            events.append(
                CoverageEvent(
                    replica=row.replica,
                    worker=row.worker,
                    session=row.session,
                    state=row.state,
                    at=at,
                    channel=channel,
                    reason=row.reason or "",
                )
            )
    last_seen: dict[SessionKey, int] = {}
    seen_query = session.prepare(
        f"SELECT last_seen FROM {keyspace}.coverage_sessions WHERE replica = ? AND worker = ? AND session = ?"
    )
    for key in {(e.replica, e.worker, e.session) for e in events}:
        row = session.execute(seen_query, key).one()
        if row is not None and row.last_seen is not None:
            last_seen[key] = _ms(row.last_seen)
    found = [
        s
        for s in spans(events, last_seen, now_ms=now, silent_after_ms=SILENT_AFTER_MS)
        if s.end > since_ms and s.start < until
    ]
    return Coverage(channel, since_ms, until, found, gaps(found, since_ms=since_ms, until_ms=until))


def _ms(value: Any) -> int:
    """Epoch ms of a driver timestamp (a naive UTC datetime)."""
    from datetime import UTC

    return int(value.replace(tzinfo=UTC).timestamp() * 1000)


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
