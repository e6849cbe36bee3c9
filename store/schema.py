"""The keyspace's tables (``store/cassandra.cql``, the one place they are defined), the layout version a
keyspace holds, and the check every reader and writer makes before it starts.

``layout`` holds one row, ``name = 'chatlog'``: the :data:`LAYOUT` the keyspace holds. A new keyspace is
created at it. A keyspace of the layout before (rows per message in ``chat_by_channel`` and
``chat_by_user``, from before store/ existed) has no such row: :func:`found_layout` says 1, and
``chatlog init`` migrates it (:mod:`store.migrate`) before it records :data:`LAYOUT`; one of layout 2 gets
the static ``parts`` of ``user_blocks`` and its months' parts named there. The sink, ``chatlog
serve`` and ``chatlog logs`` call :func:`require_layout`: at any other version they refuse, in one line that
says to run ``chatlog init``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib import resources
from typing import TYPE_CHECKING, Any

from core.errors import ChatlogError
from core.replication import normalize_replication
from store.layout import LAYOUT, NAME, OLD_TABLES, PARTS_SINCE, columns_of, tables_of

if TYPE_CHECKING:
    from core.settings import CassandraSettings


class LayoutMismatch(ChatlogError):
    """The keyspace holds another layout than this code reads and writes."""


def statements(keyspace: str, replication: str) -> list[str]:
    """The CQL statements of ``store/cassandra.cql``, filled in, comments removed, in order."""
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,47}", keyspace):
        raise ValueError(f"invalid keyspace name {keyspace!r}: lower-case letters, digits and _ only")
    replication = normalize_replication(replication)
    text = resources.files("store").joinpath("cassandra.cql").read_text()
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    text = text.format(keyspace=keyspace, replication=replication)
    return [s.strip() for s in text.split(";") if s.strip()]


def found_layout(session: Any, keyspace: str) -> int | None:
    """The layout ``keyspace`` holds: its ``layout`` row's version; 1 for a keyspace with the tables of
    layout 1 and no row; None for a keyspace with neither (new, or not made by chatlog)."""
    tables = tables_of(session, keyspace)
    if "layout" in tables:
        rows = session.execute(
            f"SELECT version FROM {keyspace}.layout WHERE name = %s", (NAME,), timeout=30
        ).all()
        if rows and rows[0].version is not None:
            return int(rows[0].version)
    if any(t in tables for t in OLD_TABLES):
        return 1
    return None


def record_layout(session: Any, keyspace: str, version: int = LAYOUT) -> None:
    """Record that ``keyspace`` holds ``version`` (and no migration is under way)."""
    session.execute(
        f"INSERT INTO {keyspace}.layout (name, version, since, migration) "
        "VALUES (%s, %s, toTimestamp(now()), null)",
        (NAME, version),
        timeout=30,
    )


def require_layout(session: Any, keyspace: str) -> None:
    """Raise :class:`LayoutMismatch` (one line) unless ``keyspace`` holds :data:`LAYOUT`."""
    found = found_layout(session, keyspace)
    if found == LAYOUT:
        return
    if found is None:
        raise LayoutMismatch(
            f"keyspace {keyspace} holds no chatlog layout (new, or not made by chatlog): run `chatlog init`"
        )
    raise LayoutMismatch(
        f"keyspace {keyspace} holds storage layout {found}, this chatlog reads and writes layout {LAYOUT}: "
        "run `chatlog init` to move it"
    )


def create(session: Any, keyspace: str, replication: str) -> int:
    """Create the keyspace and every table if missing, and the columns a table made by an earlier layout
    lacks (idempotent); returns how many statements ran."""
    ran = 0
    for stmt in statements(keyspace, replication):
        session.execute(stmt, timeout=60)
        ran += 1
    if "parts" not in columns_of(session, keyspace, "user_blocks"):  # a table made by layout 2
        session.execute(f"ALTER TABLE {keyspace}.user_blocks ADD parts set<int> static", timeout=60)
        ran += 1
    return ran


def apply_schema(
    settings: CassandraSettings,
    keyspace: str | None = None,
    tell: Callable[[str], None] = lambda _m: None,
    *,
    migrate: bool = True,
    progress: Callable[[int, int, Any], None] | None = None,
) -> int:
    """Create the keyspace and tables if missing, and bring the keyspace to :data:`LAYOUT`: a new one is
    recorded at it, one of layout 1 migrated first (:func:`store.migrate.migrate`, told to ``tell``; one of
    layout 2 has its months' parts named, :func:`store.migrate.fill_parts`; with
    ``migrate`` False it is refused instead, :class:`LayoutMismatch`; ``progress`` is told (keys done, keys,
    :class:`store.migrate.MigrationReport`) after each key). Returns how many statements ran."""
    from core.cql import open_session

    ks = keyspace or settings.cassandra_keyspace
    cluster, session = open_session(settings, timeout=30)
    try:
        before = found_layout(session, ks)
        if before is not None and before > LAYOUT:
            raise LayoutMismatch(
                f"keyspace {ks} holds storage layout {before}, newer than this chatlog's {LAYOUT}: "
                "upgrade chatlog"
            )
        if before is not None and before < LAYOUT and not migrate:
            raise LayoutMismatch(
                f"keyspace {ks} holds storage layout {before}, this chatlog writes layout {LAYOUT}: run "
                "`chatlog init` to move it"
            )
        count = create(session, ks, settings.cassandra_replication)
        if before == 1:
            from store.migrate import migrate as move

            if progress is None:
                move(session, ks, tell=tell)
            else:
                move(session, ks, tell=tell, progress=progress)
        elif before is not None and before < PARTS_SINCE:
            from store.migrate import fill_parts

            fill_parts(session, ks, tell=tell)
        if before != LAYOUT:
            record_layout(session, ks)
        return count
    finally:
        cluster.shutdown()
