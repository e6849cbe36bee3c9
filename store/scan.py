"""Every stored copy of a channel's lines, as written: for checks of what the pipeline stored (the demo, the
chaos and cluster suites), not for readers (:mod:`store.read` gives each line once).

:func:`channel_copies` reads the blocks of a channel key's days in a range and gives each line of each block
with the block's write time: a line written into two blocks (a copy past the sink's deduplication) comes
twice, which is what such a check counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from store import frame
from store.keys import days_of


def channel_copies(
    session: Any,
    keyspace: str,
    keys: Iterable[str],
    since_ms: int,
    until_ms: int,
    *,
    profile: Any = None,
) -> Iterator[tuple[str, frame.Line, int]]:
    """``(channel key, line, block write time in epoch ms)`` of every line stored under ``keys`` within
    ``[since_ms, until_ms)``, once per block that holds it, in no particular order."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT
    from cassandra.concurrent import execute_concurrent_with_args

    profile = EXEC_PROFILE_DEFAULT if profile is None else profile
    parts = session.prepare(f"SELECT part FROM {keyspace}.channel_days WHERE channel_key = ? AND day = ?")
    blocks = session.prepare(
        f"SELECT frame, writetime(frame) AS wt FROM {keyspace}.channel_blocks "
        "WHERE channel_key = ? AND day = ? AND part = ?"
    )
    blocks.fetch_size = 500
    days = [(key, day) for key in keys for day in days_of(since_ms, until_ms)]
    partitions: list[tuple[str, int, int]] = []
    for (key, day), (ok, rows) in zip(
        days,
        execute_concurrent_with_args(session, parts, days, concurrency=64, execution_profile=profile),
        strict=True,
    ):
        if not ok:
            raise RuntimeError(f"reading channel days back from Cassandra failed: {rows}")
        partitions += [(key, day, row.part) for row in rows]
    for (key, _day, _part), (ok, rows) in zip(
        partitions,
        execute_concurrent_with_args(
            session, blocks, partitions, concurrency=32, results_generator=True, execution_profile=profile
        ),
        strict=True,
    ):
        if not ok:
            raise RuntimeError(f"reading blocks back from Cassandra failed: {rows}")
        for row in rows:
            decoded = frame.decode(row.frame)
            written = row.wt // 1000
            for line in decoded.lines(decoded.window(since_ms, until_ms)):
                yield key, line, written


TABLES: dict[str, str] = {"channel": "channel_blocks", "user": "user_blocks"}
"""The two copies of every line: by channel (per day) and by user (per month)."""


def stored_lines(session: Any, keyspace: str, copy: str = "channel") -> Iterator[frame.Line]:
    """Every line of every block of one copy (``"channel"`` or ``"user"``, :data:`TABLES`), once per block
    that holds it: a whole-table scan, for checks of small keyspaces (tests, the chaos suites)."""
    statement = f"SELECT frame FROM {keyspace}.{TABLES[copy]}"
    for row in session.execute(statement, timeout=120):
        decoded = frame.decode(row.frame)
        yield from decoded.lines(range(len(decoded.sents)))


def stored_ids(session: Any, keyspace: str, copy: str = "channel") -> list[str]:
    """The message uuid (as text) of every stored line of one copy, once per block that holds it."""
    import uuid

    return [str(uuid.UUID(bytes=line[1])) for line in stored_lines(session, keyspace, copy)]
