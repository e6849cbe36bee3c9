"""What names a keyspace's layout, shared by the schema and the migration: the version this code reads and
writes, the name of its ``layout`` row, the tables of the layout before, and the tables a keyspace has."""

from __future__ import annotations

from typing import Any, Final

LAYOUT: Final = 3
"""The layout this code reads and writes: blocks, a user's month naming its parts beyond 0 in its part 0
(docs/storage.md). 2: blocks, those parts found through ``user_months`` only. 1: rows per message (before
store/)."""
PARTS_SINCE: Final = 3
"""The first layout whose ``user_blocks`` has the static ``parts`` (a keyspace before it gets the column, and
its months' parts filled in, from ``chatlog init``)."""
NAME: Final = "chatlog"
OLD_TABLES: Final = ("chat_by_channel", "chat_by_user")
"""Tables of layout 1 (their rows are moved into blocks by ``chatlog init``)."""


def columns_of(session: Any, keyspace: str, table: str) -> set[str]:
    """The columns ``keyspace.table`` has (empty: no such table)."""
    rows = session.execute(
        "SELECT column_name FROM system_schema.columns WHERE keyspace_name = %s AND table_name = %s",
        (keyspace, table),
        timeout=30,
    )
    return {row.column_name for row in rows}


def tables_of(session: Any, keyspace: str) -> set[str]:
    """The tables ``keyspace`` has (empty: no such keyspace)."""
    rows = session.execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace,), timeout=30
    )
    return {row.table_name for row in rows}
