"""Migration of a keyspace's user table to month partitions and the index of login user keys (docs/storage.md
"A user's month").

A keyspace made before month partitions holds a user's rows in half-day partitions only. Readers read a
user-month from its month partition, and that month's half-days too only where the month partition's static
``spilled`` is set. So the migration sets ``spilled`` in the month partition of every (channel key, user key,
month) that has a half-day partition: one scan of the table's partition keys, no row rewritten.

A keyspace made before ``user_login_keys`` holds ``login:``-keyed user rows without their index rows, and
readers skip a login key without an index row. So the same scan writes the index row (channel key, month,
user key) of every ``login:`` partition (a month or a half day), without a TTL: it lives at least as long as
the rows it points to.

The table's comment records how far the migration ran to the end: :data:`MIGRATED` once the months are
marked, :data:`LOGINS_INDEXED` once the login keys are indexed too (both ran: the keyspace is done). A
migration stopped half-way runs again at the next ``chatlog init`` (setting a flag or an index row twice
changes nothing). A table created with both has :data:`LOGINS_INDEXED` from the start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from schemas.cql import LOGIN_KEY_PREFIX, is_half_day, is_month_period, month_of

MIGRATED: Final = "chatlog: user months"
"""``chat_by_user``'s comment once its half-day partitions' months are marked (and not the login keys yet)."""
LOGINS_INDEXED: Final = "chatlog: user months, login keys"
"""``chat_by_user``'s comment once the months are marked and every ``login:`` key's months are in
``user_login_keys``: the keyspace needs no migration (schemas/cassandra.cql creates the table with it)."""


def comment_of(session: Any, keyspace: str) -> str | None:
    """``keyspace.chat_by_user``'s comment; None when the table does not exist."""
    rows = session.execute(
        "SELECT comment FROM system_schema.tables WHERE keyspace_name = %s AND table_name = 'chat_by_user'",
        (keyspace,),
    ).all()
    return str(rows[0].comment or "") if rows else None


def needs_migration(session: Any, keyspace: str) -> bool:
    """Whether ``keyspace.chat_by_user`` exists with half-day partitions' months not marked yet (its comment
    is neither :data:`MIGRATED` nor :data:`LOGINS_INDEXED`)."""
    comment = comment_of(session, keyspace)
    return comment is not None and comment not in (MIGRATED, LOGINS_INDEXED)


def needs_login_index(session: Any, keyspace: str) -> bool:
    """Whether ``keyspace.chat_by_user`` exists without :data:`LOGINS_INDEXED` as its comment: its
    ``login:`` keys may lack index rows (and its months may be unmarked too: any step left to run)."""
    comment = comment_of(session, keyspace)
    return comment is not None and comment != LOGINS_INDEXED


def has_flag(session: Any, keyspace: str) -> bool:
    """Whether ``keyspace.chat_by_user`` has the ``spilled`` column (``chatlog init`` adds it)."""
    return has_column(session, keyspace, "spilled")


def has_column(session: Any, keyspace: str, column: str) -> bool:
    """Whether ``keyspace.chat_by_user`` has ``column`` (``chatlog init`` adds the new ones)."""
    rows = session.execute(
        "SELECT column_name FROM system_schema.columns WHERE keyspace_name = %s "
        "AND table_name = 'chat_by_user' AND column_name = %s",
        (keyspace, column),
    )
    return bool(list(rows))


def mark_spilled(session: Any, keyspace: str, tell: Callable[[str], None] = lambda _m: None) -> int:
    """In one scan of ``keyspace.chat_by_user``'s partition keys: set ``spilled`` in the month partition of
    every half-day partition, and write the ``user_login_keys`` row of every ``login:`` partition's month;
    then the table's comment (:data:`LOGINS_INDEXED`). Returns how many month partitions were marked."""
    from cassandra.concurrent import execute_concurrent_with_args
    from cassandra.query import SimpleStatement

    scan = SimpleStatement(
        f"SELECT DISTINCT channel_key, user_key, period FROM {keyspace}.chat_by_user", fetch_size=5000
    )
    months: set[tuple[str, str, int]] = set()
    logins: set[tuple[str, int, str]] = set()
    for row in session.execute(scan, timeout=120):
        period = row.period
        if is_half_day(period):
            months.add((row.channel_key, row.user_key, month_of(period)))
        elif not is_month_period(period):
            continue  # an old pointer partition (yyyymm * 10 + part): no longer read
        if row.user_key.startswith(LOGIN_KEY_PREFIX):
            logins.add((row.channel_key, month_of(period), row.user_key))
    index = session.prepare(
        f"INSERT INTO {keyspace}.user_login_keys (channel_key, period, user_key) VALUES (?, ?, ?)"
    )
    mark = session.prepare(
        f"UPDATE {keyspace}.chat_by_user SET spilled = true "
        "WHERE channel_key = ? AND user_key = ? AND period = ?"
    )
    for statement, values in ((index, sorted(logins)), (mark, sorted(months))):
        for ok, result in execute_concurrent_with_args(session, statement, values, concurrency=32):
            if not ok:
                raise result
    session.execute(f"ALTER TABLE {keyspace}.chat_by_user WITH comment = '{LOGINS_INDEXED}'", timeout=60)
    tell(f"cql: {len(months)} user-month(s) of the half-day layout marked in {keyspace}.chat_by_user")
    tell(f"cql: {len(logins)} login key month(s) indexed in {keyspace}.user_login_keys")
    return len(months)
