"""The ledger's record of a fill: one ``coverage_fills`` row per time filled from a peer (read back with
the ledger by :func:`serve.coverage.read_fills`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from core.coverage_spans import Fill
from schemas.coverage import DAY_MS

INSERT_FILL: Final = (
    "INSERT INTO {ks}.coverage_fills (channel, day, start_at, peer, end_at, filled_at, lines, dropped) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def fill_row(channel: str, fill: Fill) -> tuple[Any, ...]:
    """The values of :data:`INSERT_FILL` for ``fill`` (its day: that of its start)."""
    return (
        channel,
        fill.start // DAY_MS,
        fill.start,
        fill.peer,
        fill.end,
        fill.filled_at,
        fill.lines,
        fill.dropped,
    )


def record_fills(session: Any, keyspace: str, channel: str, fills: Iterable[Fill]) -> int:
    """Write ``fills`` into the ledger (a connected session); returns how many."""
    query = session.prepare(INSERT_FILL.format(ks=keyspace))
    written = 0
    for fill in fills:
        session.execute(query, fill_row(channel, fill))
        written += 1
    return written
