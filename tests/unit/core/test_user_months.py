"""The migration's one scan of ``chat_by_user`` (core/user_months.py) with the doubles of
core/testing_cassandra: the months of half-day partitions are marked, every ``login:`` partition's month is
indexed in ``user_login_keys``, then the table's comment says both ran."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from core.testing_cassandra import Call, FakeSession, table_of
from core.user_months import LOGINS_INDEXED, mark_spilled
from schemas.cql import month_period, user_period

AT = 1_700_000_000_000  # 2023-11-14
MONTH, HALF = month_period(AT), user_period(AT)
PARTITIONS = [
    ("7", "42", MONTH),  # an id's month: nothing to do
    ("7", "42", HALF),  # an id's half day: its month marked
    ("7", "login:bob", MONTH),  # a login key's month: indexed
    ("7", "login:carol", HALF),  # a login key's half day: its month marked and indexed
    ("7", "login:dave", 202311 * 10 + 2),  # an old pointer partition: no longer read, left alone
]


def _answer(call: Call) -> list[Any]:
    if "SELECT DISTINCT" in str(getattr(call.statement, "query_string", call.statement)):
        return [SimpleNamespace(channel_key=c, user_key=u, period=p) for c, u, p in PARTITIONS]
    return []


def _one_by_one(session: Any, statement: Any, values: Iterable[Sequence[Any]], **_kw: Any) -> list[Any]:
    """``execute_concurrent_with_args`` one statement after another (the double has no clear_callbacks)."""
    return [(True, session.execute(statement, v)) for v in values]


def test_one_scan_marks_the_half_days_months_and_indexes_the_login_keys_then_the_comment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import cassandra.concurrent

    monkeypatch.setattr(cassandra.concurrent, "execute_concurrent_with_args", _one_by_one)
    session = FakeSession(_answer, threaded=False)
    told: list[str] = []
    assert mark_spilled(session, "ks", told.append) == 2
    writes = [(table_of(str(call.statement)), call.params) for call in session.executed[1:]]
    assert sorted(p for t, p in writes if t == "user_login_keys") == [
        ("7", MONTH, "login:bob"),
        ("7", MONTH, "login:carol"),
    ]
    assert sorted(p for t, p in writes if t == "chat_by_user") == [
        ("7", "42", MONTH),
        ("7", "login:carol", MONTH),
    ]
    last = str(session.executed[-1].statement)
    assert last == f"ALTER TABLE ks.chat_by_user WITH comment = '{LOGINS_INDEXED}'"
    assert len(session.executed) == 1 + 4 + 1  # one scan, the writes, the comment
    assert told[-1] == "cql: 2 login key month(s) indexed in ks.user_login_keys"
