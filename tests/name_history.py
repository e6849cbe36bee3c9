"""The name history that ``chatlog names`` and store/names.py are both tested on without Cassandra: user 42
was oldname and is newname, and user 77 took oldname after them; the rows as the driver returns them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from core.testing_cassandra import FakeSession, rows_by_table

T1 = datetime(2026, 1, 1, 10, 0, 0)  # naive UTC, as the driver returns timestamps
T2 = datetime(2026, 2, 1, 10, 0, 0)

Tables = dict[str, dict[str, list[dict[str, Any]]]]
"""Rows of each table by partition key."""


def _user(login: str, display: str, first: datetime | None, last: datetime) -> dict[str, Any]:
    return {"user_login": login, "display_name": display, "first_seen": first, "last_seen": last}


NAME_TABLES: Tables = {
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


def session_of(tables: Tables) -> FakeSession:
    """A session double that answers every read from ``tables``."""
    return FakeSession(rows_by_table(tables))
