"""Which rows an event becomes, built from the live column lists."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from schemas.cql import bucket_of, message_uuid, month_period, statements
from sink.writer.rows import TABLES, EventRows, SchemaMismatch

from core.irc_parse import parse_line
from core.testing import twitch_line
from schemas.chat_event import ChatEvent
from store.stored_line import restore, strip
from tests.unit.sink.writer.live_columns import LIVE_COLUMNS, REPLICATION

SENT_AT = 1_700_000_123_456
MESSAGE_ID = "f3974667-f339-4064-a3a7-a6ec36abd69f"


def _event(line: str, received_at: int = SENT_AT + 44) -> ChatEvent:
    event = parse_line(line, received_at=received_at)
    assert event is not None
    return event


def _message(**kw: Any) -> ChatEvent:
    args: dict[str, Any] = {
        "sent_at": SENT_AT, "login": "alice", "text": "hi", "user_id": "42", "room_id": "7",
        "message_id": MESSAGE_ID,
    }  # fmt: skip
    args.update(kw)
    return _event(twitch_line("PRIVMSG", "chan", **args))


def _rows(event: ChatEvent) -> dict[str, dict[str, object]]:
    return {
        t.table: dict(zip(t.columns, values, strict=True))
        for t, values in EventRows(LIVE_COLUMNS).rows_of(event)
    }


def test_the_schema_has_the_four_tables_of_the_layout() -> None:
    layout = {"chat_by_channel", "chat_buckets", "chat_by_user", "user_login_keys"}
    assert set(LIVE_COLUMNS) == set(TABLES) == layout
    assert LIVE_COLUMNS["chat_by_user"] == [
        "channel_key",
        "user_key",
        "period",
        "sent_at",
        "message_id",
        "line",
        "received_at",
    ]


def test_a_message_becomes_a_stripped_line_in_a_channel_row_and_a_user_row_keyed_by_ids() -> None:
    event = _message()
    rows = _rows(event)
    assert set(rows) == {"chat_by_channel", "chat_buckets", "chat_by_user"}
    channel_row = rows["chat_by_channel"]
    assert channel_row == {
        "channel_key": "7",
        "bucket": bucket_of(SENT_AT),
        "sent_at": SENT_AT,
        "message_id": uuid.UUID(MESSAGE_ID),
        "line": strip(event.raw, MESSAGE_ID, SENT_AT),
        "received_at": SENT_AT + 44,
    }
    assert "id=;" in str(channel_row["line"]) and MESSAGE_ID not in str(channel_row["line"])
    assert restore(str(channel_row["line"]), uuid.UUID(MESSAGE_ID), SENT_AT) == event.raw
    assert rows["chat_buckets"] == {"channel_key": "7", "bucket": bucket_of(SENT_AT)}
    assert rows["chat_by_user"] == {
        "channel_key": "7",
        "user_key": "42",
        "period": month_period(SENT_AT),
        "sent_at": SENT_AT,
        "message_id": uuid.UUID(MESSAGE_ID),
        "line": channel_row["line"],
        "received_at": SENT_AT + 44,
    }


def test_a_line_without_ids_is_keyed_by_logins_and_its_hashed_id_by_uuid5() -> None:
    event = _message(user_id=None, room_id=None, message_id=None)
    rows = _rows(event)
    assert rows["chat_by_channel"]["channel_key"] == "login:chan"
    assert rows["chat_by_user"]["user_key"] == "login:alice"
    assert rows["chat_by_channel"]["message_id"] == message_uuid(event.message_id) != uuid.UUID(int=0)
    line = str(rows["chat_by_channel"]["line"])  # no id tag to strip; the time is stripped all the same
    assert line == event.raw.replace(f"tmi-sent-ts={SENT_AT}", "tmi-sent-ts=")
    assert restore(line, message_uuid(event.message_id), SENT_AT) == event.raw


def test_an_id_that_is_not_a_canonical_uuid_stays_in_the_line() -> None:
    upper = MESSAGE_ID.upper()
    event = _message(message_id=upper)
    row = _rows(event)["chat_by_channel"]
    assert row["message_id"] == message_uuid(upper) != uuid.UUID(MESSAGE_ID)
    assert f"id={upper};" in str(row["line"])
    assert restore(str(row["line"]), message_uuid(upper), SENT_AT) == event.raw


def test_an_event_without_user_has_no_user_row() -> None:
    notice = _event("@msg-id=slow_on;room-id=7 :tmi.twitch.tv NOTICE #chan :slow mode")
    assert set(_rows(notice)) == {"chat_by_channel", "chat_buckets"}
    cleared = _event(twitch_line("CLEARCHAT", "chan", sent_at=SENT_AT, room_id="7"))
    assert set(_rows(cleared)) == {"chat_by_channel", "chat_buckets"}


def test_a_timeout_is_in_the_log_of_the_user_it_targets() -> None:
    event = _event(
        twitch_line("CLEARCHAT", "chan", sent_at=SENT_AT, text="baduser", user_id="42", room_id="7",
                    extra={"ban-duration": "600"})
    )  # fmt: skip
    assert _rows(event)["chat_by_user"]["user_key"] == "42"
    no_id = _event(twitch_line("CLEARCHAT", "chan", sent_at=SENT_AT, text="baduser", room_id="7"))
    assert _rows(no_id)["chat_by_user"]["user_key"] == "login:baduser"


def test_a_deleted_message_is_in_the_log_of_its_author() -> None:
    event = _event(
        twitch_line(
            "CLEARMSG", "chan", sent_at=SENT_AT, login="bob", text="bad", message_id="abc", room_id="7"
        )
    )
    assert _rows(event)["chat_by_user"]["user_key"] == "login:bob"


def test_a_login_keyed_user_row_has_its_channel_month_indexed_and_an_id_keyed_one_not() -> None:
    deleted = _event(
        twitch_line(
            "CLEARMSG", "chan", sent_at=SENT_AT, login="Bob", text="bad", message_id="abc", room_id="7"
        )
    )
    assert _rows(deleted)["user_login_keys"] == {
        "channel_key": "7",
        "period": month_period(SENT_AT),
        "user_key": "login:bob",
    }
    plain = _rows(_message(user_id=None, room_id=None, message_id=None))["user_login_keys"]
    assert plain == {"channel_key": "login:chan", "period": month_period(SENT_AT), "user_key": "login:alice"}
    assert "user_login_keys" not in _rows(_message())  # the sender's id: no login key
    timeout = _event(twitch_line("CLEARCHAT", "chan", sent_at=SENT_AT, text="x", user_id="42", room_id="7"))
    assert "user_login_keys" not in _rows(timeout)  # the target's id
    cleared = _event(twitch_line("CLEARCHAT", "chan", sent_at=SENT_AT, room_id="7"))
    assert "user_login_keys" not in _rows(cleared)  # nobody's


def test_every_column_is_mapped_and_fields_come_first() -> None:
    rows = EventRows(LIVE_COLUMNS)
    assert set(rows.columns) == {c for columns in LIVE_COLUMNS.values() for c in columns}
    assert len(rows.columns) == len(set(rows.columns))
    assert rows.columns[:2] == ("sent_at", "received_at")  # fields, read in one call; then derived ones


def test_an_unknown_column_is_reported_before_any_write() -> None:
    with pytest.raises(SchemaMismatch, match="day"):
        EventRows({"chat_by_user": [*LIVE_COLUMNS["chat_by_user"], "day"]})
    with pytest.raises(SchemaMismatch, match="not_a_sink_table"):
        EventRows({"not_a_sink_table": ["channel"]})


def test_index_tables_are_flagged() -> None:
    indexes = {name for name, (_accepts, is_index) in TABLES.items() if is_index}
    assert indexes == {"chat_buckets", "user_login_keys"}


def test_the_name_tables_bind_their_key_columns_and_the_two_times_of_the_schema() -> None:
    from sink.writer.rows import NAME_TABLES

    for table, key in NAME_TABLES.items():
        (create,) = [s for s in statements("ks", REPLICATION) if f"ks.{table} (" in s]
        columns = re.findall(r"^\s+([a-z_]+)\s+(?:text|timestamp)\s*,", create, re.MULTILINE)
        assert columns == [*key, "first_seen", "last_seen"], table
        assert f"PRIMARY KEY ({', '.join(key)})" in create, table


def test_only_events_with_ids_have_names() -> None:
    from sink.writer.rows import channel_name, user_name

    anonymous = _message(user_id=None, room_id=None)
    assert user_name(anonymous) is None and channel_name(anonymous) is None
    named = _message(display_name="Alice")
    assert (user_name(named), channel_name(named)) == (("42", "alice", "Alice"), ("7", "chan"))
