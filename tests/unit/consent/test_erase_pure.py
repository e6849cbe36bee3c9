"""The pure parts of erasure: runs of a user's rows, the report, and the user key of a stored row (the
same as the sink's)."""

from __future__ import annotations

from consent.erase import ErasureReport, _runs, row_user_key
from core.testing import chat_events, twitch_event
from schemas.cql import message_uuid
from sink.executor.rows import _event_user_key, _stored_line


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
