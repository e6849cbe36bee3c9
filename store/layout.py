"""What names a keyspace's layout, shared by the schema and the migration: the version this code reads and
writes, the name of its ``layout`` row, the tables of the layout before, and the tables a keyspace has."""

from __future__ import annotations

from typing import Any, Final

LAYOUT: Final = 2
"""The layout this code reads and writes: blocks (docs/storage.md). 1: rows per message (before store/)."""
NAME: Final = "chatlog"
OLD_TABLES: Final = ("chat_by_channel", "chat_by_user")
"""Tables of layout 1 (their rows are moved into blocks by ``chatlog init``)."""


def tables_of(session: Any, keyspace: str) -> set[str]:
    """The tables ``keyspace`` has (empty: no such keyspace)."""
    rows = session.execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace,), timeout=30
    )
    return {row.table_name for row in rows}
