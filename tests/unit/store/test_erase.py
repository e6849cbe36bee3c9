"""The pure parts of erasure (store/erase.py): the report, the delete statements (each carries its timestamp
first, so what is written after the read that found it stays) and the name history's deletes. Which lines a
user's erasure takes out of a channel's blocks (the frame's filed-under users) is tested with the consent
rule: tests/unit/consent/test_rule.py."""

from __future__ import annotations

from store.erase import TABLES, ErasureReport, _Cql, _delete_names
from tests.unit.store.session_doubles import PreparingSession as _Session


def test_the_report_lists_what_was_deleted() -> None:
    report = ErasureReport(user_id="1", channel_id=None)
    assert list(report.rows) == list(report.partitions) == list(TABLES)
    report.rows["channel_blocks"] = 5
    report.partitions["user_blocks"] = 2
    assert report.total_rows == 5
    assert report.deleted() == {"channel_blocks": 5, "user_blocks:partitions": 2}
    assert report.as_json()["rows"]["channel_blocks"] == 5
    assert report.as_json()["partitions"]["user_blocks"] == 2
    assert (report.as_json()["user_id"], report.as_json()["channel_id"]) == ("1", None)


def test_every_delete_carries_its_timestamp_first() -> None:
    cql = _Cql(_Session(), "ks")
    head = "DELETE FROM ks.{} USING TIMESTAMP ? WHERE "
    assert {name: str(query) for name, query in vars(cql).items() if name.startswith("delete_")} == {
        "delete_user_blocks": head.format("user_blocks")
        + "channel_key = ? AND user_key = ? AND month = ? AND part = ?",
        "delete_channel_blocks": head.format("channel_blocks") + "channel_key = ? AND day = ? AND part = ?",
        "delete_user_months": head.format("user_months") + "channel_key = ? AND user_key = ?",
        "delete_channel_user": head.format("channel_users") + "channel_key = ? AND user_key = ?",
        "delete_channel_users": head.format("channel_users") + "channel_key = ?",
        "delete_channel_days": head.format("channel_days") + "channel_key = ?",
        "delete_user_names": head.format("user_names") + "user_id = ?",
        "delete_user_login": head.format("user_ids_by_login") + "user_login = ? AND user_id = ?",
        "delete_channel_names": head.format("channel_names") + "channel_id = ?",
        "delete_channel_login": head.format("channel_ids_by_login") + "channel = ? AND channel_id = ?",
    }
    # a channel block rewritten without a user's lines: the old one deleted at its own write time
    assert str(cql.channel_blocks.delete) == (
        "DELETE FROM ks.channel_blocks USING TIMESTAMP ? WHERE channel_key = ? AND day = ? AND part = ? "
        "AND first_at = ? AND block = ?"
    )


def test_the_name_history_is_its_login_rows_then_its_partition() -> None:
    session = _Session()
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
    session = _Session()
    report = ErasureReport(user_id="1", channel_id=None)
    _delete_names(_Cql(session, "ks"), "user", "1", [], 0, 77, report)
    assert not session.executed and report.total_rows == 0
