"""Which rows an event becomes, built from the live column lists."""

from __future__ import annotations

import pytest

from schemas.chat_event import FIELD_NAMES, ChatEvent
from schemas.cql import bucket_of
from sink.executor.rows import TABLES, EventRows, SchemaMismatch

CHANNEL_COLUMNS = [
    "channel",
    "bucket",
    "sent_at",
    "message_id",
    *[f for f in FIELD_NAMES if f not in ("channel", "sent_at", "message_id")],
]
MODERATION_COLUMNS = [
    "channel", "bucket", "sent_at", "message_id", "kind", "target_user_login", "target_user_id",
    "target_message_id", "ban_duration_s", "text", "tags", "raw", "received_at",
]  # fmt: skip


def _event(**kw: object) -> ChatEvent:
    base: dict[str, object] = {
        "message_id": "m1", "kind": "PRIVMSG", "channel": "chan", "user_login": "alice", "text": "hi",
        "sent_at": 1_700_000_123_456, "received_at": 1_700_000_123_500, "raw": "raw line",
    }  # fmt: skip
    base.update(kw)
    return ChatEvent(**base)  # type: ignore[arg-type]


LIVE_COLUMNS = {
    "messages_by_channel": CHANNEL_COLUMNS,
    "channel_buckets": ["channel", "bucket"],
    "messages_by_user": ["user_login", *CHANNEL_COLUMNS],
    "moderation_by_channel": MODERATION_COLUMNS,
}


def _rows(event: ChatEvent) -> dict[str, dict[str, object]]:
    return {
        t.table: dict(zip(t.columns, values, strict=True))
        for t, values in EventRows(LIVE_COLUMNS).rows_of(event)
    }


def test_a_message_becomes_channel_user_and_index_rows() -> None:
    event = _event()
    rows = _rows(event)
    assert set(rows) == {"messages_by_channel", "channel_buckets", "messages_by_user"}
    channel_row = rows["messages_by_channel"]
    assert channel_row["bucket"] == bucket_of(event.sent_at)
    assert {k: v for k, v in channel_row.items() if k != "bucket"} == {
        f: getattr(event, f) for f in FIELD_NAMES
    }
    assert rows["messages_by_user"] == channel_row
    assert rows["channel_buckets"] == {"channel": "chan", "bucket": bucket_of(event.sent_at)}


def test_an_event_without_user_has_no_user_rows() -> None:
    assert set(_rows(_event(user_login=None, kind="NOTICE"))) == {"messages_by_channel", "channel_buckets"}


def test_clearchat_keeps_target_and_ban_duration() -> None:
    event = _event(
        kind="CLEARCHAT",
        user_login=None,
        text="baduser",
        tags={"ban-duration": "600", "target-user-id": "42"},
    )
    mod = _rows(event)["moderation_by_channel"]
    assert (mod["target_user_login"], mod["target_user_id"], mod["ban_duration_s"]) == ("baduser", "42", 600)
    assert mod["target_message_id"] is None


def test_clearmsg_keeps_the_deleted_message_id_and_its_author() -> None:
    event = _event(kind="CLEARMSG", user_login=None, tags={"login": "bob", "target-msg-id": "abc"})
    mod = _rows(event)["moderation_by_channel"]
    assert (mod["target_user_login"], mod["target_message_id"], mod["ban_duration_s"]) == ("bob", "abc", None)


def test_whole_chat_clear_has_no_target() -> None:
    event = _event(kind="CLEARCHAT", user_login=None, text=None)
    mod = _rows(event)["moderation_by_channel"]
    assert mod["target_user_login"] is None and mod["ban_duration_s"] is None


def test_every_column_is_mapped_and_fields_come_first() -> None:
    rows = EventRows(LIVE_COLUMNS)
    channel = next(t for t in rows.tables if t.table == "messages_by_channel")
    assert sorted(channel.columns) == sorted(CHANNEL_COLUMNS)
    assert channel.columns[-1] == "bucket"
    assert set(rows.columns) == {c for columns in LIVE_COLUMNS.values() for c in columns}
    assert len(rows.columns) == len(set(rows.columns))


def test_an_unknown_column_is_reported_before_any_write() -> None:
    with pytest.raises(SchemaMismatch, match="day"):
        EventRows({"messages_by_user": [*CHANNEL_COLUMNS, "day"]})
    with pytest.raises(SchemaMismatch, match="not_a_sink_table"):
        EventRows({"not_a_sink_table": ["channel"]})


def test_index_tables_are_flagged() -> None:
    assert {name for name, (_accepts, is_index) in TABLES.items() if is_index} == {"channel_buckets"}


def test_the_name_tables_bind_their_key_columns_and_the_two_times_of_the_schema() -> None:
    import re

    from schemas.cql import statements
    from sink.executor.rows import NAME_TABLES

    for table, key in NAME_TABLES.items():
        (create,) = [
            s
            for s in statements("ks", "{'class': 'SimpleStrategy', 'replication_factor': 1}")
            if f"ks.{table} (" in s
        ]
        columns = re.findall(r"^\s+([a-z_]+)\s+(?:text|timestamp)\s*,", create, re.MULTILINE)
        assert columns == [*key, "first_seen", "last_seen"], table
        assert f"PRIMARY KEY ({', '.join(key)})" in create, table


def test_only_events_with_ids_have_names() -> None:
    from sink.executor.rows import channel_name, user_name

    assert user_name(_event()) is None and channel_name(_event()) is None
    named = _event(user_id="42", channel_id="7", display_name="Alice")
    assert (user_name(named), channel_name(named)) == (("42", "alice", "Alice"), ("7", "chan"))
    assert user_name(_event(user_id="42", user_login=None)) is None
