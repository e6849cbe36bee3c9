"""The pure parts of erasure: runs of a user's rows, the report, the user key of a stored row (the
same as the sink's), the delete statements and the name history's deletes."""

from __future__ import annotations

from schemas.cql import message_uuid
from sink.writer.rows import _event_user_key, _stored_line

from core.testing import chat_events, twitch_event
from core.testing_cassandra import FakeSession
from store.erase import ErasureReport, _Cql, _delete_names, _runs, row_user_key


def test_runs_are_the_maximal_stretches() -> None:
    assert _runs([]) == []
    assert _runs([True, True, False, True, False, False, True]) == [(0, 1), (3, 3), (6, 6)]
    assert _runs([True] * 4) == [(0, 3)]
    assert _runs([False, False]) == []


def test_the_report_lists_what_was_deleted() -> None:
    report = ErasureReport(user_id="1", channel_id=None)
    report.rows["chat_by_channel"] = 5
    report.partitions["chat_by_user"] = 2
    assert report.total_rows == 5
    assert report.deleted() == {"chat_by_channel": 5, "chat_by_user:partitions": 2}
    assert report.as_json()["rows"]["chat_by_channel"] == 5


def test_a_rows_user_key_is_the_sinks() -> None:
    events = [
        *chat_events(400, channels=2),
        *chat_events(100, channels=2, ids=False),
        twitch_event("CLEARMSG", "chan0", sent_at=1_790_000_000_000, login="someone", message_id="x"),
        twitch_event("CLEARCHAT", "chan0", sent_at=1_790_000_000_000),  # the whole chat: nobody's
    ]
    kinds = set()
    for event in events:
        stored = _stored_line(event)
        assert row_user_key(stored, message_uuid(event.message_id), event.sent_at) == _event_user_key(event)
        kinds.add(event.kind)
    assert kinds == {"PRIVMSG", "CLEARCHAT", "CLEARMSG"}


def test_every_delete_carries_its_timestamp_first() -> None:
    cql = _Cql(FakeSession(), "ks")
    head = "DELETE FROM ks.{} USING TIMESTAMP ? WHERE "
    assert {name: query for name, query in vars(cql).items() if name.startswith("delete_")} == {
        "delete_bucket": head.format("chat_by_channel") + "channel_key = ? AND bucket = ?",
        "delete_range": head.format("chat_by_channel") + "channel_key = ? AND bucket = ? "
        "AND (sent_at, message_id) >= (?, ?) AND (sent_at, message_id) <= (?, ?)",
        "delete_row": head.format("chat_by_channel")
        + "channel_key = ? AND bucket = ? AND sent_at = ? AND message_id = ?",
        "delete_pointers": head.format("chat_by_user") + "channel_key = ? AND user_key = ? AND period = ?",
        "delete_buckets": head.format("chat_buckets") + "channel_key = ?",
        "delete_login_key": head.format("user_login_keys")
        + "channel_key = ? AND period = ? AND user_key = ?",
        "delete_login_keys": head.format("user_login_keys") + "channel_key = ? AND period = ?",
        "delete_user_names": head.format("user_names") + "user_id = ?",
        "delete_user_login": head.format("user_ids_by_login") + "user_login = ? AND user_id = ?",
        "delete_channel_names": head.format("channel_names") + "channel_id = ?",
        "delete_channel_login": head.format("channel_ids_by_login") + "channel = ? AND channel_id = ?",
    }


def test_the_name_history_is_its_login_rows_then_its_partition() -> None:
    session = FakeSession()
    cql = _Cql(session, "ks")
    report = ErasureReport(user_id="1", channel_id=None)
    _delete_names(cql, "user", "1", ["a", "b"], 3, 77, report)
    _delete_names(cql, "channel", "9", ["c"], 1, 88, report)
    assert [(c.statement, tuple(c.params)) for c in session.executed] == [
        (cql.delete_user_login, (77, "a", "1")),
        (cql.delete_user_login, (77, "b", "1")),
        (cql.delete_user_names, (77, "1")),
        (cql.delete_channel_login, (88, "c", "9")),
        (cql.delete_channel_names, (88, "9")),
    ]
    assert report.deleted() == {
        "user_ids_by_login": 2,
        "user_names": 3,
        "channel_ids_by_login": 1,
        "channel_names": 1,
        "user_names:partitions": 1,
        "channel_names:partitions": 1,
    }


def test_no_login_no_name_partition_deleted() -> None:
    session = FakeSession()
    report = ErasureReport(user_id="1", channel_id=None)
    _delete_names(_Cql(session, "ks"), "user", "1", [], 0, 77, report)
    assert not session.executed and report.total_rows == 0
