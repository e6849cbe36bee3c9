"""store/schema.py and store/cassandra.cql: the statements of a keyspace (its replication map as rendered,
the tables of layout 2 and none of layout 1), the tables' keys as the writers, pack and erasure bind them,
and the layout a keyspace holds, checked by every reader and writer in one line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from core.testing_cassandra import Call, FakeSession
from store import pack, write
from store.blocks import CHANNEL, USER
from store.layout import LAYOUT, OLD_TABLES
from store.schema import LayoutMismatch, found_layout, require_layout, statements
from tests.unit.store.live_schema import REPLICATION, tables


def test_the_keyspace_statement_holds_exactly_the_rendered_map() -> None:
    stmts = statements("chatlog", '{"class": "NetworkTopologyStrategy", "dc1": 3}')
    assert stmts == statements("chatlog", "{'class': 'NetworkTopologyStrategy', 'dc1': 3}")
    create = stmts[0]
    assert create.startswith("CREATE KEYSPACE IF NOT EXISTS chatlog")
    assert create.endswith("WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3}")
    assert all("--" not in s and "{keyspace}" not in s for s in stmts)
    assert all(s.startswith(("CREATE KEYSPACE IF NOT EXISTS", "CREATE TABLE IF NOT EXISTS")) for s in stmts)


@pytest.mark.parametrize("keyspace", ["", "Chatlog", "1chatlog", "chat-log", "chatlog; DROP", "x" * 49])
def test_a_keyspace_name_cql_would_not_take_as_it_is_is_refused(keyspace: str) -> None:
    with pytest.raises(ValueError, match="invalid keyspace name"):
        statements(keyspace, REPLICATION)


def test_the_schema_is_the_tables_of_the_blocks_layout_and_none_of_the_layout_before() -> None:
    found = tables()
    assert {"layout", "channel_blocks", "user_blocks", "channel_days", "user_months", "channel_users"} <= set(
        found
    )
    assert set(write.NAME_TABLES) <= set(found) and "erased_logins" in found
    assert not set(OLD_TABLES) & set(found) and not {"chat_buckets", "user_login_keys"} & set(found)


def test_the_writers_insert_the_block_tables_own_columns_keyed_as_blocks_are() -> None:
    found = tables()
    for table, name in write.BLOCK_TABLES.items():
        columns = write._BLOCK_COLUMNS[table]
        live = found[name]
        statics = {"parts"} if table == USER else set()  # written by its own statement (the index rows')
        assert set(columns) == set(live.columns) - statics  # every column, none the table lacks
        key = (*live.partition, *live.clustering)
        assert columns[: len(key)] == key  # bound in the key's order (its routing key first)
        assert pack._PARTITION_COLUMNS[table] == live.partition  # what pack and erasure read and delete by
        assert live.clustering == ("first_at", "block")
        assert [live.columns[c] for c in ("first_at", "block", "last_at", "lines", "frame")] == [
            "timestamp",
            "uuid",
            "timestamp",
            "int",
            "blob",
        ]
    assert found["channel_blocks"].partition == ("channel_key", "day", "part")  # store.blocks.Block.key
    assert found["user_blocks"].partition == ("channel_key", "user_key", "month", "part")
    assert found["user_blocks"].columns["parts"] == "set<int> static"
    assert [found["channel_blocks"].columns[c] for c in found["channel_blocks"].partition] == [
        "text",
        "int",
        "int",
    ]


def test_the_index_rows_are_the_block_partitions_they_find() -> None:
    found = tables()
    for table, index in ((CHANNEL, "channel_days"), (USER, "user_months")):
        live = found[index]
        assert (*live.partition, *live.clustering) == pack._index_columns(table)
        assert (*live.partition, *live.clustering) == found[write.BLOCK_TABLES[table]].partition
    assert (*found["channel_users"].partition, *found["channel_users"].clustering) == (
        "channel_key",
        "user_key",
    )
    assert set(write.INDEX_TABLES) == {"channel_days", "user_months", "channel_users"}


def test_the_name_rows_are_keyed_as_the_writer_binds_them() -> None:
    found = tables()
    for name, key in write.NAME_TABLES.items():
        live = found[name]
        assert (*live.partition, *live.clustering) == key
        assert set(live.columns) == {*key, "first_seen", "last_seen"}
        assert live.columns["first_seen"] == live.columns["last_seen"] == "timestamp"


# -- the layout a keyspace holds -------------------------------------------------------------------------


class _Rows(list[Any]):
    """A driver result: its rows, and ``all()``."""

    def all(self) -> list[Any]:
        return list(self)


class _Session(FakeSession):
    def execute(self, statement: Any, parameters: Sequence[Any] = (), **kwargs: Any) -> Any:
        return _Rows(super().execute(statement, parameters, **kwargs))


def _keyspace(tables_: Sequence[str], version: int | None = None) -> _Session:
    """A session whose keyspace has ``tables_`` and, with ``version``, a layout row of it."""

    def answer(call: Call) -> list[Any]:
        if "system_schema.tables" in str(call.statement):
            return [SimpleNamespace(table_name=t) for t in tables_]
        if ".layout" in str(call.statement) and version is not None:
            return [SimpleNamespace(version=version)]
        return []

    return _Session(answer)


@pytest.mark.parametrize(
    ("tables_", "version", "found"),
    [
        (["layout", "channel_blocks"], LAYOUT, LAYOUT),
        (["chat_by_channel", "chat_by_user"], None, 1),  # before store/: no layout row
        (["layout", "chat_by_channel"], None, 1),  # a migration under way: the row not written yet
        (["layout", "chat_by_channel"], 2, 2),
        ([], None, None),  # no such keyspace
        (["layout"], None, None),  # made, but nothing recorded: not chatlog's
        (["layout"], LAYOUT + 1, LAYOUT + 1),
    ],
)
def test_the_layout_a_keyspace_holds(tables_: list[str], version: int | None, found: int | None) -> None:
    assert found_layout(_keyspace(tables_, version), "ks") == found


def test_a_reader_or_writer_refuses_another_layout_in_one_line_naming_chatlog_init() -> None:
    require_layout(_keyspace(["layout"], LAYOUT), "ks")
    cases: Mapping[str, _Session] = {
        "holds storage layout 1, this chatlog reads and writes layout 3": _keyspace(["chat_by_user"]),
        "holds storage layout 2, this chatlog reads and writes layout 3": _keyspace(["layout"], 2),
        "holds no chatlog layout": _keyspace([]),
        f"holds storage layout {LAYOUT + 1}": _keyspace(["layout"], LAYOUT + 1),
    }
    for message, session in cases.items():
        with pytest.raises(LayoutMismatch, match=message) as info:
            require_layout(session, "ks")
        assert "\n" not in str(info.value) and "chatlog init" in str(info.value)
