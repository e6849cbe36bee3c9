"""Migration of a keyspace of the half-day user layout to month partitions (docs/storage.md "A user's month").

A keyspace made before month partitions holds a user's rows in half-day partitions only. Readers read a
user-month from its month partition, and that month's half-days too only where the month partition's static
``spilled`` is set. So the migration sets ``spilled`` in the month partition of every (channel key, user key,
month) that has a half-day partition: one scan of the table's partition keys, no row rewritten. The table's
comment records that it ran to the end (:data:`MIGRATED`): a migration stopped half-way runs again at the next
``chatlog init`` (setting a flag twice changes nothing). A table created with month partitions has the comment
from the start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from schemas.cql import is_half_day, month_of

MIGRATED: Final = "chatlog: user months"
"""``chat_by_user``'s comment once its half-day partitions' months are marked (schemas/cassandra.cql)."""


def needs_migration(session: Any, keyspace: str) -> bool:
    """Whether ``keyspace.chat_by_user`` exists without :data:`MIGRATED` as its comment."""
    rows = session.execute(
        "SELECT comment FROM system_schema.tables WHERE keyspace_name = %s AND table_name = 'chat_by_user'",
        (keyspace,),
    ).all()
    return bool(rows) and rows[0].comment != MIGRATED


def has_flag(session: Any, keyspace: str) -> bool:
    """Whether ``keyspace.chat_by_user`` has the ``spilled`` column (``chatlog init`` adds it)."""
    rows = session.execute(
        "SELECT column_name FROM system_schema.columns WHERE keyspace_name = %s "
        "AND table_name = 'chat_by_user' AND column_name = 'spilled'",
        (keyspace,),
    ).all()
    return bool(rows)


def mark_spilled(session: Any, keyspace: str, tell: Callable[[str], None] = lambda _m: None) -> int:
    """Set ``spilled`` in the month partition of every half-day partition of ``keyspace.chat_by_user``, then
    the table's comment; returns how many month partitions were marked."""
    from cassandra.concurrent import execute_concurrent_with_args
    from cassandra.query import SimpleStatement

    scan = SimpleStatement(
        f"SELECT DISTINCT channel_key, user_key, period FROM {keyspace}.chat_by_user", fetch_size=5000
    )
    months = {
        (row.channel_key, row.user_key, month_of(row.period))
        for row in session.execute(scan, timeout=120)
        if is_half_day(row.period)
    }
    mark = session.prepare(
        f"UPDATE {keyspace}.chat_by_user SET spilled = true "
        "WHERE channel_key = ? AND user_key = ? AND period = ?"
    )
    for ok, result in execute_concurrent_with_args(session, mark, sorted(months), concurrency=32):
        if not ok:
            raise result
    session.execute(f"ALTER TABLE {keyspace}.chat_by_user WITH comment = '{MIGRATED}'", timeout=60)
    tell(f"cql: {len(months)} user-month(s) of the half-day layout marked in {keyspace}.chat_by_user")
    return len(months)
