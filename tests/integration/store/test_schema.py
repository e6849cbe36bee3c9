"""store.schema.apply_schema (``chatlog init``, the sink's start-up schema step) on the real Cassandra: a new
keyspace gets every table of store/cassandra.cql and its layout recorded, and applying it again changes
nothing (tables, columns, options); a keyspace of the oldest layout 1 (stop 24's pointer rows in the user
table) is refused without a migration, in one line and untouched, and moved to blocks with one. (The
layout check of every reader and writer: tests/integration/chatlog/cli/test_init.py; a migration of real
rows: tests/integration/store/test_migrate.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest

from core.cql import connect
from core.settings import StackSettings
from store.layout import LAYOUT, OLD_TABLES, tables_of
from store.scan import TABLES as COPIES
from store.schema import LayoutMismatch, apply_schema, found_layout, statements

pytestmark = pytest.mark.integration

OLD_USER_TABLE = """CREATE TABLE {ks}.chat_by_user (
  channel_key text, user_key text, period int, sent_at timestamp, message_id uuid,
  PRIMARY KEY ((channel_key, user_key, period), sent_at, message_id))"""
"""The user table of stop 24 (pointer rows, no line): the oldest keyspace ``chatlog init`` moves."""


class Made(NamedTuple):
    """Settings naming a keyspace of a test's own, a session, and that keyspace."""

    settings: StackSettings
    session: Any
    keyspace: str


@pytest.fixture
def made(stack: StackSettings, unique: str) -> Iterator[Made]:
    """A keyspace of this test's own (dropped afterwards)."""
    settings = stack.model_copy(update={"cassandra_keyspace": f"schema{unique}"})
    cluster, session = connect(settings)
    try:
        yield Made(settings, session, settings.cassandra_keyspace)
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {settings.cassandra_keyspace}", timeout=60)
        cluster.shutdown()


def _schema(session: Any, keyspace: str) -> dict[str, Any]:
    """Every table's columns (name, kind, type, clustering order) and options, as Cassandra holds them."""
    columns = session.execute(
        "SELECT table_name, column_name, kind, type, clustering_order, position FROM system_schema.columns "
        "WHERE keyspace_name = %s",
        (keyspace,),
        timeout=30,
    )
    tables = session.execute(
        "SELECT table_name, compression, default_time_to_live, gc_grace_seconds FROM system_schema.tables "
        "WHERE keyspace_name = %s",
        (keyspace,),
        timeout=30,
    )
    out: dict[str, Any] = {}
    for row in tables:
        out[row.table_name] = {"options": (dict(row.compression), row.default_time_to_live), "columns": set()}
    for row in columns:
        out[row.table_name]["columns"].add(
            (row.column_name, row.kind, row.type, row.clustering_order, row.position)
        )
    return out


def test_a_new_keyspace_gets_every_table_and_its_layout_and_a_second_apply_changes_nothing(
    made: Made,
) -> None:
    settings, session, keyspace = made
    told: list[str] = []

    count = apply_schema(settings, tell=told.append)

    assert count == len(statements(keyspace, settings.cassandra_replication))
    assert found_layout(session, keyspace) == LAYOUT
    first = _schema(session, keyspace)
    created = [
        s.split(".", 1)[1].split(" ", 1)[0] for s in statements(keyspace, settings.cassandra_replication)[1:]
    ]
    assert set(first) == set(created) == tables_of(session, keyspace)
    assert not set(OLD_TABLES) & set(first)
    assert told == []  # nothing to migrate

    assert apply_schema(settings, tell=told.append) == count
    assert _schema(session, keyspace) == first and found_layout(session, keyspace) == LAYOUT
    assert told == []


@pytest.fixture
def pointer_rows(made: Made) -> Made:
    """``made`` with its keyspace as stop 24 left it: the user table of pointer rows, empty."""
    replication = "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    made.session.execute(f"CREATE KEYSPACE {made.keyspace} WITH replication = {replication}", timeout=60)
    made.session.execute(OLD_USER_TABLE.format(ks=made.keyspace), timeout=60)
    return made


def test_a_keyspace_of_layout_1_is_refused_without_a_migration_and_left_untouched(
    pointer_rows: Made,
) -> None:
    settings, session, keyspace = pointer_rows
    assert found_layout(session, keyspace) == 1

    with pytest.raises(LayoutMismatch) as refused:
        apply_schema(settings, migrate=False)

    assert str(refused.value) == (
        f"keyspace {keyspace} holds storage layout 1, this chatlog writes layout {LAYOUT}: "
        "run `chatlog init` to move it"
    )
    assert tables_of(session, keyspace) == {"chat_by_user"}


def test_a_keyspace_of_pointer_rows_is_moved_to_blocks_and_a_second_apply_changes_nothing(
    pointer_rows: Made,
) -> None:
    settings, session, keyspace = pointer_rows
    told: list[str] = []

    apply_schema(settings, tell=told.append)

    assert found_layout(session, keyspace) == LAYOUT
    tables = tables_of(session, keyspace)
    assert "chat_by_user" not in tables and set(COPIES.values()) <= tables
    assert any("migrating keyspace" in line for line in told), told
    assert any("dropped the tables of layout 1" in line for line in told), told
    after = _schema(session, keyspace)
    told.clear()
    apply_schema(settings, tell=told.append)
    assert _schema(session, keyspace) == after and told == []
