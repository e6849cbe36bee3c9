"""store/names.py without Cassandra: one partition read per lookup, each statement prepared once per
session, oldest first."""

from __future__ import annotations

import asyncio

from core.testing_cassandra import reads
from store.names import IdSeen, NameSeen, channel_ids, user_ids, user_names
from tests.name_history import NAME_TABLES, T2, Tables, session_of

MS1, MS2 = 1_767_261_600_000, 1_769_940_000_000  # T1, T2
TABLES: Tables = {
    **NAME_TABLES,
    "channel_ids_by_login": {"forsen": [{"channel_id": "22484632", "first_seen": None, "last_seen": T2}]},
}


def test_a_history_is_one_read_oldest_first_and_an_empty_display_name_is_none() -> None:
    session = session_of(TABLES)
    assert asyncio.run(user_names(session, "42", "ks")) == [
        NameSeen("oldname", None, MS1, MS1),
        NameSeen("newname", "NewName", MS2, MS2),
    ]
    assert reads(session) == [("user_names", "42")]
    assert session.prepared == [
        "SELECT user_login, display_name, first_seen, last_seen FROM ks.user_names WHERE user_id = ?"
    ]


def test_each_statement_is_prepared_once_per_session_and_without_a_keyspace_the_sessions_is_read() -> None:
    session = session_of(TABLES)

    async def three() -> list[list[NameSeen]]:
        return [await user_names(session, user_id) for user_id in ("42", "7", "42")]

    found, unknown, again = asyncio.run(three())
    assert found == again and len(found) == 2 and unknown == []
    assert session.prepared == [
        "SELECT user_login, display_name, first_seen, last_seen FROM user_names WHERE user_id = ?"
    ]
    assert reads(session) == [("user_names", "42"), ("user_names", "7"), ("user_names", "42")]


def test_a_login_lookup_is_normalized_and_lists_every_id_oldest_first() -> None:
    session = session_of(TABLES)
    assert asyncio.run(user_ids(session, " OldName ", "ks")) == [
        IdSeen("42", MS1, MS1),
        IdSeen("77", MS2, MS2),
    ]
    assert asyncio.run(channel_ids(session, "#Forsen", "ks")) == [IdSeen("22484632", None, MS2)]
    assert reads(session) == [("user_ids_by_login", "oldname"), ("channel_ids_by_login", "forsen")]


def test_an_empty_login_is_not_sent_to_cassandra() -> None:
    session = session_of(TABLES)
    assert asyncio.run(user_ids(session, " # ", "ks")) == []
    assert reads(session) == []
