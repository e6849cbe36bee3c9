"""``chatlog init`` on a keyspace made before the user rows held their line (stop 24's pointer rows): the
schema adds the columns, so the sink writes and the readers read the new rows there; applying it again
changes nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from core.cql import apply_schema, connect
from core.settings import StackSettings

OLD_USER_TABLE = """CREATE TABLE {ks}.chat_by_user (
  channel_key text, user_key text, period int, sent_at timestamp, message_id uuid,
  PRIMARY KEY ((channel_key, user_key, period), sent_at, message_id))"""


@pytest.fixture
def old_keyspace(stack: StackSettings, unique: str) -> Iterator[StackSettings]:
    settings = stack.model_copy(update={"cassandra_keyspace": f"old{unique}"})
    cluster, session = connect(settings)
    ks = settings.cassandra_keyspace
    try:
        session.execute(
            f"CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
        )
        session.execute(OLD_USER_TABLE.format(ks=ks), timeout=60)
        yield settings
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {ks}", timeout=60)
        cluster.shutdown()


def _user_columns(settings: StackSettings) -> set[str]:
    cluster, session = connect(settings)
    try:
        rows = session.execute(
            "SELECT column_name FROM system_schema.columns WHERE keyspace_name = %s AND table_name = %s",
            (settings.cassandra_keyspace, "chat_by_user"),
        )
        return {row.column_name for row in rows}
    finally:
        cluster.shutdown()


def test_an_old_user_table_gets_the_line_columns_and_a_second_apply_changes_nothing(
    old_keyspace: StackSettings,
) -> None:
    assert "line" not in _user_columns(old_keyspace)
    apply_schema(old_keyspace)
    after = _user_columns(old_keyspace)
    assert {"line", "received_at", "period", "sent_at", "message_id"} <= after
    apply_schema(old_keyspace)
    assert _user_columns(old_keyspace) == after
