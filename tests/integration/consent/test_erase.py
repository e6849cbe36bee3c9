"""Erasure (``chatlog erase``, an opt-out's) on the real Cassandra, over lines the sink's executor wrote:
a user everywhere, a user in one channel, a whole channel. Afterwards the erased lines are in neither copy
(a channel's days, a user's months), no reader finds them, the name history is gone where it should be,
and every other line is stored exactly as before; a re-run deletes nothing; the audit row. (How the store
deletes them, a run killed halfway, packed periods: tests/integration/store/test_erase.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from consent import audit
from consent.records import login_digest
from core.errors import ChatlogError
from store.erase import erase
from store.keys import filed_under, message_uuid
from tests.integration.consent.filled_keyspace import (
    CHANNELS,
    TARGET_ID,
    TARGET_KEYS,
    TARGET_LOGIN,
    Filled,
    Stored,
    read_stored,
)

pytestmark = pytest.mark.integration


def target_ids(filled: Filled, channel: str | None = None) -> set[str]:
    """The message uuids (text) of every event filed under user5 (in ``channel``, if given)."""
    return {
        str(message_uuid(e.message_id))
        for e in filled.events
        if filed_under(e) in TARGET_KEYS and channel in (None, e.channel_id)
    }


def assert_user_gone(stored: Stored, filled: Filled, *, channel: str | None = None) -> None:
    """user5's lines (in ``channel``, if given) are in neither copy, and no reader finds them."""
    gone = target_ids(filled, channel)
    for copy in ("channel", "user"):
        assert [k for k in stored.ids(copy) if k[0] in gone] == []
    for (c, user), months in stored.months.items():
        if user in (TARGET_ID, TARGET_LOGIN) and channel in (None, c):
            assert months == [], (c, user)
    if channel is None:
        assert TARGET_ID not in stored.user_names and TARGET_LOGIN not in stored.user_ids
        marks = (f"user-id={TARGET_ID}", f"login={TARGET_LOGIN};", f":{TARGET_LOGIN}!", f" :{TARGET_LOGIN}")
        assert [line for line in stored.lines if any(m in line for m in marks)] == []
        for copy in ("channel", "user"):
            assert stored.ids(copy, keys=TARGET_KEYS) == {}


def _erased_logins(session: Any, keyspace: str) -> dict[str, set[str]]:
    # no reader of the store reads the digests but the sink's opt-out follower: read as it reads them
    out: dict[str, set[str]] = {}
    for row in session.execute(f"SELECT user_id, digest FROM {keyspace}.erased_logins"):
        out.setdefault(row.user_id, set()).add(row.digest)
    return out


def test_erase_a_user_everywhere_leaves_no_line_and_a_rerun_deletes_nothing(
    filled: Filled, session: Any
) -> None:
    keyspace = filled.settings.cassandra_keyspace
    before = read_stored(session, keyspace)
    mine = target_ids(filled)
    assert len(mine) > 40  # sent, timed out (CLEARCHAT), deleted (CLEARMSG, by login) in 3 channels
    for copy in ("channel", "user"):  # every line stored once in each copy, filed under user5's keys
        assert {k[0] for k in before.ids(copy, keys=TARGET_KEYS)} == mine
        assert {k[1] for k in before.ids(copy, keys=TARGET_KEYS)} == TARGET_KEYS
    assert before.messages("channel") == filled.ids() and before.messages("user") == filled.ids(user=True)
    assert before.months[("502", TARGET_LOGIN)] and before.months[("500", TARGET_ID)]
    assert before.user_names[TARGET_ID] == [TARGET_LOGIN, TARGET_LOGIN]  # user5 and User5 (display names)

    report = erase(session, keyspace, user_id=TARGET_ID, by="test:erase")

    assert report.rows["channel_blocks"] == len(mine)
    assert report.rows["user_blocks"] == len(mine)
    assert report.rows["user_names"] == 2 and report.rows["user_ids_by_login"] == 1
    after = read_stored(session, keyspace)
    assert_user_gone(after, filled)
    # everyone else's lines are all there, in both copies, each as often as before
    assert after.channel == before.without("channel", mine)
    assert after.user == before.without("user", mine)
    assert after.days == before.days and after.channels == before.channels
    assert {k: m for k, m in after.months.items() if k[1] not in (TARGET_ID, TARGET_LOGIN)} == {
        k: m for k, m in before.months.items() if k[1] not in (TARGET_ID, TARGET_LOGIN)
    }
    assert after.user_names == {u: n for u, n in before.user_names.items() if u != TARGET_ID}
    assert after.channel_names == before.channel_names
    # the login survives only as its digest, for a sink started later (a CLEARMSG names it by login)
    assert _erased_logins(session, keyspace) == {TARGET_ID: {login_digest(TARGET_LOGIN)}}

    again = erase(session, keyspace, user_id=TARGET_ID, by="test:erase")
    assert again.total_rows == 0 and sum(again.partitions.values()) == 0
    assert read_stored(session, keyspace) == after

    entries = audit.read(session, keyspace)
    erased = [e for e in entries if e.action == "erase"]
    assert len(erased) == 2
    assert (erased[1].kind, erased[1].id, erased[1].by) == ("user", TARGET_ID, "test:erase")
    assert erased[1].deleted["channel_blocks"] == len(mine)
    assert erased[0].deleted == {}


def test_erase_a_user_in_one_channel_keeps_the_other_channels(filled: Filled, session: Any) -> None:
    keyspace = filled.settings.cassandra_keyspace
    before = read_stored(session, keyspace)
    assert before.user_names[TARGET_ID] and before.user_ids[TARGET_LOGIN] == [TARGET_ID]
    gone = target_ids(filled, "501")
    report = erase(session, keyspace, user_id=TARGET_ID, channel_id="501", by="t")
    assert report.rows["channel_blocks"] == report.rows["user_blocks"] == len(gone) > 0
    after = read_stored(session, keyspace)
    assert_user_gone(after, filled, channel="501")
    assert after.channel == before.without("channel", gone)  # user5's lines in 500 and 502 among them
    assert after.user == before.without("user", gone)
    for channel in ("500", "502"):
        assert after.months[(channel, TARGET_ID)] == before.months[(channel, TARGET_ID)] != []
    assert after.user_names == before.user_names  # the name history is not per channel
    assert report.rows["user_names"] == 0
    assert _erased_logins(session, keyspace) == {}  # the logins stay in clear


def test_erase_a_channel_removes_its_lines_from_both_copies_and_its_names(
    filled: Filled, session: Any
) -> None:
    keyspace = filled.settings.cassandra_keyspace
    before = read_stored(session, keyspace)
    gone = set(filled.ids(channel="502"))
    assert before.days["502"] > 0 and "502" in before.channels
    assert before.channel_names["502"] == [CHANNELS["502"]] and before.channel_ids[CHANNELS["502"]] == ["502"]
    assert [k for k, m in before.months.items() if k[0] == "502" and m] != []

    report = erase(session, keyspace, channel_id="502", by="t")

    after = read_stored(session, keyspace)
    assert after.channel == before.without("channel", gone)
    assert after.user == before.without("user", gone)
    assert report.rows["channel_blocks"] == len(gone)
    assert after.days == {**before.days, "502": 0}
    assert after.channels == [c for c in before.channels if c != "502"]
    assert [k for k, m in after.months.items() if k[0] == "502" and m] == []
    assert {k: m for k, m in after.months.items() if k[0] != "502"} == {
        k: m for k, m in before.months.items() if k[0] != "502"
    }
    assert "502" not in after.channel_names and CHANNELS["502"] not in after.channel_ids
    assert after.channel_names == {c: n for c, n in before.channel_names.items() if c != "502"}
    assert after.user_names == before.user_names  # users are not erased with a channel
    assert erase(session, keyspace, channel_id="502", by="t").total_rows == 0


def test_bad_ids_and_a_missing_keyspace_are_one_line(filled: Filled, session: Any) -> None:
    with pytest.raises(ChatlogError, match="digits only"):
        erase(session, filled.settings.cassandra_keyspace, user_id="user5", by="t")
    with pytest.raises(ChatlogError, match="a user id, a channel id"):
        erase(session, filled.settings.cassandra_keyspace, by="t")
    with pytest.raises(ChatlogError, match="nosuchkeyspace"):
        erase(session, "nosuchkeyspace", user_id=TARGET_ID, by="t")
