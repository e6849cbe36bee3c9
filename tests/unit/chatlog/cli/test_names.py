"""``chatlog names``' identities without Cassandra: the ids a query names (as an id and as a login), each
with its whole history (read by serve/store/names.py over a session double)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from chatlog.cli.names import identities
from core.testing_cassandra import FakeSession, reads, rows_by_table

T1 = datetime(2026, 1, 1, 10, 0, 0)  # naive UTC, as the driver returns timestamps
T2 = datetime(2026, 2, 1, 10, 0, 0)


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
}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def _Session(tables: dict[str, dict[str, list[dict[str, Any]]]]) -> FakeSession:  # noqa: N802
    return FakeSession(rows_by_table(tables))


def test_identities_by_login_give_each_id_with_its_whole_history() -> None:
    found = run(identities(_Session(SESSION_TABLES), "ks", "oldname"))
    assert [(i.id, [n.login for n in i.names]) for i in found] == [
        ("42", ["oldname", "newname"]),
        ("77", ["oldname"]),
    ]


def test_a_number_is_looked_up_as_an_id_and_as_a_login_and_unknown_ids_are_left_out() -> None:
    session = _Session(SESSION_TABLES)
    found = run(identities(session, "ks", "42"))
    assert [i.id for i in found] == ["42"]
    assert ("user_ids_by_login", "42") in reads(session)
    assert run(identities(_Session(SESSION_TABLES), "ks", "123")) == []
    assert run(identities(_Session(SESSION_TABLES), "ks", "nobody")) == []
