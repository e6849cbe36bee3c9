"""store/names.py without Cassandra: one partition read per lookup, each statement prepared once per
session, oldest first."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from core.testing_cassandra import FakeSession, reads, rows_by_table
from store.names import IdSeen, NameSeen, channel_ids, user_ids, user_names

T1 = datetime(2026, 1, 1, 10, 0, 0)  # naive UTC, as the driver returns timestamps
T2 = datetime(2026, 2, 1, 10, 0, 0)
MS1, MS2 = 1_767_261_600_000, 1_769_940_000_000


def _user(login: str, display: str, first: datetime | None, last: datetime) -> dict[str, Any]:
    return {"user_login": login, "display_name": display, "first_seen": first, "last_seen": last}


SESSION_TABLES: dict[str, dict[str, list[dict[str, Any]]]] = {
    "user_names": {
        "42": [_user("newname", "NewName", T2, T2), _user("oldname", "", T1, T1)],
        "77": [_user("oldname", "OldName", T2, T2)],
    },
    "user_ids_by_login": {
        "oldname": [
            {"user_id": "77", "first_seen": T2, "last_seen": T2},
            {"user_id": "42", "first_seen": T1, "last_seen": T1},
        ],
    },
    "channel_ids_by_login": {"forsen": [{"channel_id": "22484632", "first_seen": None, "last_seen": T2}]},
}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def _Session(tables: dict[str, dict[str, list[dict[str, Any]]]]) -> FakeSession:  # noqa: N802
    return FakeSession(rows_by_table(tables))


def test_a_history_is_one_read_oldest_first_and_an_empty_display_name_is_none() -> None:
    session = _Session(SESSION_TABLES)
    assert run(user_names(session, "42", "ks")) == [
        NameSeen("oldname", None, MS1, MS1),
        NameSeen("newname", "NewName", MS2, MS2),
    ]
    assert reads(session) == [("user_names", "42")]
    assert session.prepared == [
        "SELECT user_login, display_name, first_seen, last_seen FROM ks.user_names WHERE user_id = ?"
    ]


def test_each_statement_is_prepared_once_per_session_and_without_a_keyspace_the_sessions_is_read() -> None:
    session = _Session(SESSION_TABLES)

    async def three() -> list[list[NameSeen]]:
        return [await user_names(session, user_id) for user_id in ("42", "7", "42")]

    found, unknown, again = run(three())
    assert found == again and len(found) == 2 and unknown == []
    assert session.prepared == [
        "SELECT user_login, display_name, first_seen, last_seen FROM user_names WHERE user_id = ?"
    ]
    assert reads(session) == [("user_names", "42"), ("user_names", "7"), ("user_names", "42")]


def test_a_login_lookup_is_normalized_and_lists_every_id_oldest_first() -> None:
    session = _Session(SESSION_TABLES)
    assert run(user_ids(session, " OldName ", "ks")) == [IdSeen("42", MS1, MS1), IdSeen("77", MS2, MS2)]
    assert run(channel_ids(session, "#Forsen", "ks")) == [IdSeen("22484632", None, MS2)]
    assert reads(session) == [("user_ids_by_login", "oldname"), ("channel_ids_by_login", "forsen")]


def test_an_empty_login_is_not_sent_to_cassandra() -> None:
    session = _Session(SESSION_TABLES)
    assert run(user_ids(session, " # ", "ks")) == []
    assert reads(session) == []
